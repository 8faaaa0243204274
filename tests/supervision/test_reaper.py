"""The run's reaper (``watch.py run``, its code in reaper.py), run by path as smmpi runs it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from smmpi.runners.local.hostfiles import WATCH
from smmpi.supervision.reaper import children


def test_the_reaper_kills_what_its_command_left_and_ends_as_the_command(tmp_path: Path) -> None:
    """A process COMMAND left behind is re-parented to the reaper: it is killed and named."""
    argv = [sys.executable, "-I", "-S", str(WATCH), "run", "--parent", str(os.getpid())]
    # (exit only once the child is sleep: before its exec, it is still a copy of sh)
    left = "sleep 300 & p=$!; echo $p > pid; until grep -qx sleep /proc/$p/comm; do :; done; exit 3"
    argv += ["--record", str(tmp_path), "--", "sh", "-c", left]
    proc = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 3, proc.stderr
    strays = json.loads((tmp_path / "strays.json").read_text(encoding="utf-8"))
    pid = int((tmp_path / "pid").read_text(encoding="ascii"))
    assert strays == [{"rank": None, "pid": pid, "command": "sleep 300"}]
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_children_are_read_from_the_kernel() -> None:
    child = subprocess.Popen(["sleep", "30"])
    try:
        assert child.pid in children(os.getpid(), recursive=False)
    finally:
        child.kill()
        child.wait()
