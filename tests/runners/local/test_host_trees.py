"""Every instance's tree, laid out as the container chosen for the job needs it."""

from __future__ import annotations

import json
from pathlib import Path

from smmpi.api import options
from smmpi.archives import pack
from smmpi.catalog import resolve
from smmpi.runners.local.containers import Entrypoint, ModelLine, RealToolkit
from smmpi.runners.local.host_trees import lay_out, say_start
from smmpi.runners.local.mpi import preflight
from smmpi.runners.local.preflight import Checked
from smmpi.toolkit.offline import request_from_program
from smmpi.toolkit.plan import plan


def _config(run_dir: Path, host: str) -> dict[str, str]:
    path = run_dir / host / "opt" / "ml" / "input" / "config" / "hyperparameters.json"
    data: dict[str, str] = json.loads(path.read_text(encoding="utf-8"))
    return data


def test_the_models_instances_get_the_unpacked_code_and_the_requests_hyperparameters(
    tmp_path: Path,
) -> None:
    program = resolve("demo")
    request = request_from_program(program, 2, 1)
    planned = plan(request)
    run_dir = tmp_path / "hosts"
    run_dir.mkdir()
    lay_out(planned, pack(program.files(), "ENTRY"), options(), run_dir, ModelLine(planned))
    for host in ("algo-1", "algo-2"):
        code = run_dir / host / "opt" / "ml" / "code"
        assert (code / "demo.py").read_bytes() == (program.source_dir / "demo.py").read_bytes()
        assert _config(run_dir, host) == request["HyperParameters"]
    assert not (run_dir / ".smmpi" / "code").exists()


def test_the_real_toolkit_fetches_the_code_itself_from_where_its_instances_see_it(
    tmp_path: Path,
) -> None:
    program = resolve("demo")
    request = request_from_program(program, 2, 1)
    run_dir = tmp_path / "hosts"
    run_dir.mkdir()
    source = pack(program.files(), "ENTRY")
    lay_out(plan(request), source, options(), run_dir, RealToolkit(()))
    staged = run_dir / ".smmpi" / "code" / "sourcedir.tar.gz"
    assert staged.read_bytes() == source
    for host in ("algo-1", "algo-2"):
        assert list((run_dir / host / "opt" / "ml" / "code").iterdir()) == []
        hps = _config(run_dir, host)
        assert json.loads(hps["sagemaker_submit_directory"]) == str(staged)
        assert hps["sagemaker_program"] == request["HyperParameters"]["sagemaker_program"]


def test_a_runs_first_lines_say_the_mode_and_the_container(tmp_path: Path) -> None:
    planned = plan(request_from_program(resolve("demo"), 1, 1))
    shape = planned.shape
    lines: list[str] = []
    say_start(
        "smmpi: first",
        shape,
        Checked("hosts", None, None, preflight()),
        ModelLine(planned),
        lines.append,
    )
    assert lines[:1] == ["smmpi: first"]
    assert not any("processes mode" in line for line in lines)
    lines.clear()
    driver = Entrypoint(planned, {}, "smmpi: the request's own start")
    say_start(
        "smmpi: first",
        shape,
        Checked("processes", "asked for", None, preflight()),
        driver,
        lines.append,
    )
    assert lines[0] == "smmpi: first"
    assert lines[1].startswith("smmpi: processes mode (asked for): ")
    assert lines[2] == "smmpi: the request's own start"
