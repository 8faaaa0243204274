"""``python -m pytest -p tests.cpu_report``: each test's CPU seconds, its waited-for
processes' included."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.helpers import ROOT

TESTS = """
import subprocess, sys
def test_busy():
    subprocess.run([sys.executable, "-c", "x = 0\\nfor i in range(20_000_000): x += i"], check=True)
def test_idle():
    subprocess.run(["sleep", "0.5"], check=True)
"""


def test_each_tests_cpu_counts_the_processes_it_waited_for(tmp_path: Path) -> None:
    (tmp_path / "test_two.py").write_text(TESTS, encoding="utf-8")
    out = tmp_path / "cpu.jsonl"
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist"]
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "SMMPI_CPU_REPORT": str(out)}
    done = subprocess.run(
        [*argv, "-p", "tests.cpu_report", "test_two.py"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    figures = {
        row["test"]: row["cpu_s"]
        for row in map(json.loads, out.read_text(encoding="utf-8").splitlines())
    }
    assert figures["test_two.py::test_busy"] > 0.3, figures
    assert figures["test_two.py::test_idle"] < figures["test_two.py::test_busy"] / 3, figures
    assert "CPU seconds per test" in done.stdout
