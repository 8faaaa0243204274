"""``smmpi run``'s throwaway run folder: the same route as a local job, and nothing kept."""

from __future__ import annotations

import io
import shutil
from pathlib import Path

import pytest

from smmpi.api import options
from smmpi.archives import pack
from smmpi.catalog import resolve
from smmpi.runners.local import sessions
from smmpi.runners.local.job import run
from smmpi.runners.local.records import LocalJob
from smmpi.runners.local.supervise import EXIT_FAILED, RunResult
from smmpi.runners.local.throwaway import ending_lines
from smmpi.supervision import room
from smmpi.toolkit.offline import request_from_program


def _run(keep: bool, lines: list[str], out: io.StringIO) -> LocalJob:
    program = resolve("demo")
    request = request_from_program(program, 2, 1)
    chosen = options(
        throwaway=True, keep=keep, isolation="processes", out=out, err=out, progress=lines.append
    )
    return run(request, pack(program.files(), "ENTRY"), chosen)


@pytest.mark.own_mode
def test_a_throwaway_run_leaves_no_folder_and_no_local_job(
    local_env: dict[str, str], tmp_path: Path
) -> None:
    lines: list[str] = []
    out = io.StringIO()
    job = _run(False, lines, out)
    assert job.exit_code == 0, (lines, out.getvalue())
    assert job.status == "Completed"
    assert (
        lines[0] == "smmpi: demo on 2 emulated host(s) x 1 process(es) = 2 ranks (processes mode)"
    )
    assert "demo: all 2 ranks verified their results" in out.getvalue()
    assert not job.folder.exists()  # the throwaway run folder is gone
    assert not Path(local_env["SMMPI_LOCAL_JOBS"]).exists()  # and no local job was made
    assert ending_lines(job, 2, None, False) == [
        f"smmpi: 2 ranks on 2 emulated host(s) completed in {job.result.seconds:.1f} s"
    ]


@pytest.mark.own_mode
def test_a_kept_throwaway_run_says_where_its_host_trees_are(local_env: dict[str, str]) -> None:
    lines: list[str] = []
    job = _run(True, lines, io.StringIO())
    try:
        assert job.exit_code == 0, lines
        assert (job.folder / "algo-2" / "opt" / "ml" / "code" / "demo.py").is_file()
        assert ending_lines(job, 2, None, True)[-1] == (
            f"smmpi: host trees kept under {job.folder}"
        )
    finally:
        shutil.rmtree(job.folder, ignore_errors=True)


def test_a_failed_runs_last_line_names_the_rank_with_the_hint(tmp_path: Path) -> None:
    result = RunResult(EXIT_FAILED, "Failed", 1.0, tmp_path, 2)
    result.reason = "ZeroDivisionError: division by zero"
    result.failed_rank, result.failed_host = 1, "algo-2"
    job = LocalJob("smmpi-run-x", tmp_path, {"TrainingJobStatus": "Failed"}, result)
    last = ending_lines(job, 2, "helper.py is beside x.py", False)
    assert last == [f"smmpi: {result.failure_line} (helper.py is beside x.py)"]
    assert last[0].startswith("smmpi: rank 1 (algo-2) ")


@pytest.mark.own_mode
def test_a_throwaway_runs_room_is_checked_once_before_any_work(
    local_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[Path] = []
    real = room.free_bytes

    def counted(folder: Path) -> int | None:
        asked.append(folder)
        return real(folder)

    monkeypatch.setattr(room, "free_bytes", counted)
    monkeypatch.setattr(sessions, "free_bytes", counted)  # (where the run itself would ask)
    job = _run(False, [], io.StringIO())
    assert job.exit_code == 0
    assert len(asked) == 1, asked  # the preflight's, on the temporary folder
