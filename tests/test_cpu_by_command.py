"""``benchmarks/cpu_by_command.py``: CPU seconds by command, from process accounting (root, as
CI runs)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from tests.helpers import ROOT

SCRIPT = ROOT / "benchmarks" / "cpu_by_command.py"
BUSY = f"{sys.executable} -c 'x = 0\nfor i in range(20_000_000): x += i'"


def _count(tmp_path: Path, name: str, line: str) -> dict[str, float]:
    """Rows of ``cpu_by_command -- NAME -c LINE``, NAME a shell under a name of its own."""
    shell = tmp_path / name
    shell.symlink_to("/bin/sh")
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--", str(shell), "-c", line],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    rows = re.findall(r"^ *(\d+\.\d) {2}(.+)$", done.stderr, re.MULTILINE)  # the last run's last
    return {name: float(cpu) for cpu, name in rows}


def _busy_under(rows: dict[str, float], parent: str) -> float:
    return max((cpu for name, cpu in rows.items() if name.endswith(f" <- {parent}")), default=0)


def test_a_busy_python_is_counted_under_its_named_parent(tmp_path: Path) -> None:
    rows = _count(tmp_path, "busyparent", f"{BUSY}; true")  # two commands: sh stays the parent
    assert _busy_under(rows, "busyparent") > 0.3, rows


def test_a_count_inside_a_count_leaves_the_outer_one_counting(tmp_path: Path) -> None:
    """`python benchmarks/cpu_by_command.py -- make test` runs the test above inside its own
    count: the inner one must not turn accounting off under the outer one."""
    inner = tmp_path / "inner"
    inner.mkdir()
    (inner / "busyinner").symlink_to("/bin/sh")
    nested = f'{sys.executable} {SCRIPT} -- {inner / "busyinner"} -c "{BUSY}; true"'
    rows = _count(tmp_path, "busyouter", f"{nested}; {BUSY}; true")
    assert _busy_under(rows, "busyinner") > 0.3, rows  # the inner run's child, counted by both
    assert _busy_under(rows, "busyouter") > 0.3, rows  # after the inner run ended
