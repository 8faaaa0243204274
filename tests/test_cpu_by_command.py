"""``benchmarks/cpu_by_command.py``: CPU seconds by command, from process accounting."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.helpers import ROOT

BUSY = "x = 0\nfor i in range(20_000_000): x += i"


def test_a_busy_python_is_counted_under_its_named_parent(tmp_path: Path) -> None:
    """Accounting needs root, as CI runs; the parent is a shell under a name of its own."""
    parent = tmp_path / "busyparent"
    parent.symlink_to("/bin/sh")
    script = ROOT / "benchmarks" / "cpu_by_command.py"
    line = f"{sys.executable} -c '{BUSY}'; true"  # two commands: the shell stays the parent
    done = subprocess.run(
        [sys.executable, str(script), "--", str(parent), "-c", line],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    rows = {line.split(None, 1)[1]: float(line.split()[0]) for line in done.stderr.splitlines()[1:]}
    busy = {name: cpu for name, cpu in rows.items() if name.endswith(" <- busyparent")}
    assert busy and max(busy.values()) > 0.3, done.stderr
