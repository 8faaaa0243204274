"""A local job's output (``submit --local``) as ``smmpi logs`` shows a submitted job's: each
rank's own file under the job's ``logs/`` folder (``rank-R.log``), read back as log lines."""

from __future__ import annotations

import re
from pathlib import Path

from smmpi.bounded import FileRefused, read_regular
from smmpi.ops.cloudwatch import LogLine, rank_host
from smmpi.ops.local_jobs import local_record
from smmpi.ops.status import JobStatus, record_status

#: The most of one rank's file that is read back
LOG_CAP = 64 << 20
_RANK_FILE = re.compile(r"rank-(\d{1,7})\.log")


def local_log(name: str) -> tuple[JobStatus, list[LogLine]] | None:
    """Local job ``name``'s status and every rank's lines, ranks in order (None: smmpi has
    no local job of that name). ``name`` is a checked job name."""
    found = local_record(name)
    if found is None:
        return None
    st, folder = record_status(found[0]), found[1] / "logs"
    ranks = sorted(
        (int(m.group(1)), path)
        for path in (folder.iterdir() if folder.is_dir() and not folder.is_symlink() else ())
        if (m := _RANK_FILE.fullmatch(path.name))
    )
    lines: list[LogLine] = []
    for rank, path in ranks:
        host = rank_host(rank, st.processes_per_host) or "algo-1"
        lines += [LogLine(host, rank, "stdout", text) for text in _text(path).splitlines()]
    return st, lines


def _text(path: Path) -> str:
    """A rank's file (a regular file, not a link, its first LOG_CAP bytes); "" if unreadable."""
    try:
        data = read_regular(path, "local job log", LOG_CAP, follow=False)
    except FileRefused:
        return ""
    return data.decode("utf-8", errors="replace")
