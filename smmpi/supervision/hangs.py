"""A run that timed out: known hangs named from where the ranks were (their stacks).

At a timeout every rank's Python stack is dumped (``rank-R.stack``). The innermost frame's
source line says what a rank was doing; :data:`smmpi.mpi_output.HANG_PITFALLS` names the
hangs that SageMaker's containers cause, such as MPI-IO on a folder each instance has its own
copy of.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

from smmpi.bounded import FileRefused, read_regular
from smmpi.mpi_output import HANG_PITFALLS, Pitfall
from smmpi.platform.layout import host_dirs
from smmpi.supervision.result import Run

_FRAME = re.compile(r'^\s*File "(?P<path>[^"]+)", line (?P<line>\d+) in ')
SOURCE_MAX_BYTES = 4 * 1024 * 1024  # a program's source file read to show one line of it


def innermost(stack: str) -> tuple[str, int] | None:
    """The (path, line) of a faulthandler dump's innermost frame (it comes first)."""
    for text in stack.splitlines():
        m = _FRAME.match(text)
        if m:
            return m["path"], int(m["line"])
    return None


def source_line(path: str, line: int, code: Path) -> str:
    """Line ``line`` of ``path`` as the rank saw it: a relative path is under the instance's
    code dir (the ranks' working directory), /opt/ml/... under the instance's tree."""
    if not path.startswith("/"):
        where = code / path
    elif path.startswith("/opt/ml/"):
        where = code.parent / path.removeprefix("/opt/ml/")
    else:
        where = Path(path)
    try:
        lines = read_regular(where, "source", SOURCE_MAX_BYTES).decode(errors="replace")
    except FileRefused:
        return ""
    found = lines.splitlines()
    return found[line - 1] if 0 < line <= len(found) else ""


def hang_pitfall(
    stacks: Mapping[int, str], run: Run, pitfalls: tuple[Pitfall, ...] = HANG_PITFALLS
) -> str | None:
    """The cause and fix of a known hang that ranks on several instances are in, or None."""
    if run.mode != "hosts":  # processes mode: the instances share this machine's folders
        return None
    where: dict[int, str] = {}
    for rank, stack in stacks.items():
        frame = innermost(stack)
        if frame is not None:
            where[rank] = source_line(*frame, host_dirs(run.run_dir, run.host(rank)).code)
    for pitfall in pitfalls:
        ranks = sorted(r for r, text in where.items() if pitfall.pattern.search(text))
        if len({run.host(r) for r in ranks}) > 1:
            named = ", ".join(f"{r} ({run.host(r)})" for r in ranks)
            return f"ranks {named} were in `{where[ranks[0]].strip()}`: {pitfall.note}"
    return None
