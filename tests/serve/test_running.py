"""A job's worker process as serve holds it: its environment, its output lines, its end."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from smmpi.serve.running import Running, pump_lines, read_result, worker_env
from smmpi.serve.state import write_json


def test_the_worker_gets_no_aws_variable_of_serve(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "serve-secret")
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:1")
    monkeypatch.setenv("SMMPI_TEST_KEPT", "kept")
    env = worker_env(Path("/srv/runs"))
    assert not [name for name in env if name.startswith("AWS_")]
    assert env["SMMPI_TEST_KEPT"] == "kept"
    assert env["SMMPI_LOCAL_JOBS"] == "/srv/runs" and env["PYTHONUNBUFFERED"] == "1"


def test_the_workers_lines_reach_the_sink_decoded() -> None:
    code = "import sys; sys.stdout.buffer.write(b'one\\r\\ntwo \\xff\\nlast')"
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE)
    lines: list[str] = []
    pump_lines(proc.stdout, lines.append)
    assert proc.wait(timeout=60) == 0
    assert lines == ["one", "two \ufffd", "last"]


def test_the_end_is_the_workers_record_or_how_serve_saw_it_end(tmp_path: Path) -> None:
    running = Running()
    assert read_result(tmp_path, running, -9) == {
        "status": "Failed",
        "exit_code": -9,
        "line": "the job's worker ended with code -9",
    }
    running.stop.set()
    assert read_result(tmp_path, running, -15)["status"] == "Stopped"
    write_json(tmp_path / "result.json", {"status": "Completed", "exit_code": 0})
    assert read_result(tmp_path, running, 0) == {"status": "Completed", "exit_code": 0}
