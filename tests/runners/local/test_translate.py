"""The container's Open MPI 4 line here: three substitutions (isolated hosts), or token by token
with a reason (processes mode); the same Open MPI 4.1 either way, so nothing is renamed."""

from __future__ import annotations

import json

from smmpi.runners.local.translate import exports, local_flags, table, translate
from tests.helpers import ROOT

GOLDEN = ROOT / "tests" / "golden"


def _container() -> list[str]:
    argv: list[str] = json.loads((GOLDEN / "demo_3x2_tensorflow.mpirun.json").read_text())
    return argv


def _row(container: tuple[str, ...]):  # type: ignore[no-untyped-def]
    rows = [r for r in translate(_container()) if r.container[: len(container)] == container]
    assert rows, container
    return rows[0]


def test_processes_mode_keeps_open_mpi_4_flags_and_drops_what_has_no_meaning_here() -> None:
    for kept in (
        ("-mca", "orte_abort_on_non_zero_status", "1"),
        ("-mca", "btl_vader_single_copy_mechanism", "none"),
        ("-mca", "plm_rsh_no_tree_spawn", "1"),
        ("-mca", "btl", "^openib"),
        ("-bind-to", "none"),
    ):
        assert _row(kept).local == kept
    assert _row(("-mca", "btl_tcp_if_include")).local == ()
    assert _row(("--display-map",)).local == ()
    assert _row(("-x", "NCCL_DEBUG=INFO")).local == ("-x", "NCCL_DEBUG=INFO")
    preload = next(
        r
        for r in translate(_container())
        if r.container[1:2] and r.container[1].startswith("LD_PRELOAD=")
    )
    assert preload.local == () and "gethostname" in preload.why
    assert "app context" in _row(("--host",)).why
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


def test_isolated_hosts_table_is_the_three_substitutions() -> None:
    rows = table(_container(), "/venv/bin/python", "hosts")
    assert [(r.container[:1], r.local) for r in rows] == [
        (("mpirun",), ("mpirun", "-mca", "plm_rsh_agent", "<launch agent>")),
        (("-x",), ()),
        (("/usr/local/bin/python3.12",), ("/venv/bin/python",)),
    ]
    assert rows[1].container[1].startswith("LD_PRELOAD=") and "gethostname" in rows[1].why
    assert table(_container(), "/p", "processes") == translate(_container(), "/p")


def test_custom_options_keep_their_names_and_exports_go_to_every_context() -> None:
    custom = ["-x", "FOO=1", "-mca", "orte_abort_on_non_zero_status", "1"]
    custom += ["--mca", "plm_rsh_agent", "ssh"]
    flags = local_flags(custom)
    assert flags[:4] == ["-bind-to", "none", "-map-by", "slot"]
    assert "-x" not in flags  # Open MPI 4.1 would give it to the first app context only
    assert flags[-6:] == [
        "-mca",
        "orte_abort_on_non_zero_status",
        "1",
        "-mca",
        "plm_rsh_agent",
        "ssh",
    ]
    assert exports(custom) == ["-x", "FOO=1"]
