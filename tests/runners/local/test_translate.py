"""The container's Open MPI 4 line, said in Open MPI 5, token by token with a reason."""

from __future__ import annotations

import json

from smmpi.runners.local.translate import local_flags, translate
from tests.helpers import ROOT

GOLDEN = ROOT / "tests" / "golden"


def _container() -> list[str]:
    argv: list[str] = json.loads((GOLDEN / "demo_3x2_tensorflow.mpirun.json").read_text())
    return argv


def _row(container: tuple[str, ...]):  # type: ignore[no-untyped-def]
    rows = [r for r in translate(_container()) if r.container[: len(container)] == container]
    assert rows, container
    return rows[0]


def test_open_mpi_4_flags_get_open_mpi_5_equivalents() -> None:
    assert _row(("-mca", "orte_abort_on_non_zero_status")).local == ()
    assert _row(("-mca", "btl_vader_single_copy_mechanism")).local == (
        "--mca",
        "smsc",
        "^cma,knem,xpmem",
    )
    assert _row(("-mca", "plm_rsh_no_tree_spawn")).local == ("--mca", "plm_ssh_no_tree_spawn", "1")
    assert _row(("-mca", "btl", "^openib")).local == ()
    assert _row(("-bind-to",)).local == ("--bind-to", "none")
    assert _row(("-mca", "btl_tcp_if_include")).local == ()
    assert _row(("-x", "NCCL_DEBUG=INFO")).local == ("-x", "NCCL_DEBUG=INFO")
    preload = next(
        r
        for r in translate(_container())
        if r.container[1:2] and r.container[1].startswith("LD_PRELOAD=")
    )
    assert preload.local == () and "gethostname" in preload.why
    host = _row(("--host",))
    assert "app context" in host.why
    # every row says why, and the program runs unchanged
    rows = translate(_container(), "/venv/bin/python")
    assert all(r.why for r in rows)
    assert (
        rows[-1].container
        == rows[-1].local
        == ("-m", "mpi4py", "demo.py", "--model_dir", "/opt/ml/model")
    )
    assert rows[-2].local == ("/venv/bin/python",)


def test_every_container_token_is_accounted_for() -> None:
    rows = translate(_container())
    covered = [t for r in rows for t in r.container]
    assert covered == _container()


def test_local_flags_keep_custom_options_and_rename_old_ones() -> None:
    flags = local_flags(
        [
            "-x",
            "FOO=1",
            "-mca",
            "orte_abort_on_non_zero_status",
            "1",
            "--mca",
            "plm_rsh_agent",
            "ssh",
        ]
    )
    assert flags[:4] == ["--bind-to", "none", "--map-by", "slot"]
    assert ["-x", "FOO=1"] == flags[flags.index("-x") : flags.index("-x") + 2]
    assert "orte_abort_on_non_zero_status" not in flags
    assert "plm_ssh_agent" in flags
