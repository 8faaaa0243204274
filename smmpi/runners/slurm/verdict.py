"""Which rank failed a SLURM job, on which node, and why: the words local runs use.

Each rank records its own exception, ``MPI_Abort`` or ``sys.exit`` (the rank hook, in the
job folder's ``records/``); srun says how each task ended in the job's output
(``srun: error: node2: task 3: Exited with exit code 1``). The first failure is named by
the local runs' classification (:class:`~smmpi.supervision.exits.Ends`), in the words of the
table of causes (:mod:`smmpi.causes`).
"""

from __future__ import annotations

import dataclasses
import math
import re
import signal
from pathlib import Path

from smmpi.bounded import read_regular
from smmpi.causes import ranked, say
from smmpi.errors import SmmpiError
from smmpi.mpi_output import FailureScan, printable
from smmpi.runners.slurm.operate import LOG_MAX_BYTES, JobState, rank_logs
from smmpi.supervision.exits import Ends
from smmpi.supervision.rank_records import RankEnd
from smmpi.supervision.verdict import crashed

BLAMED = ("FAILED", "OUT_OF_MEMORY", "NODE_FAIL")
_TASK_END = re.compile(r"^srun: error: (\S+): tasks? ([0-9,\-]+): (.+)$")
_EXITED = re.compile(r"^Exited with exit code ([0-9]+)$")
_SIGNALS = {signal.strsignal(s) or "": int(s) for s in signal.Signals}
_OUT_OF_MEMORY = "Out Of Memory"  # srun's word for a task its node's OOM killer ended


def _ranks(spec: str) -> list[int]:
    ranks: list[int] = []
    for part in spec.split(","):
        low, _, high = part.partition("-")
        if low.isdigit() and (not high or high.isdigit()):
            ranks += range(int(low), int(high or low) + 1)
    return ranks


def task_ends(output: str) -> tuple[dict[int, RankEnd], dict[int, str]]:
    """Each task srun reported as failed, and its node, from the job's output."""
    ends: dict[int, RankEnd] = {}
    nodes: dict[int, str] = {}
    for line in output.splitlines():
        match = _TASK_END.match(line.strip())
        if not match:
            continue
        node, spec, how = match.groups()
        exited = _EXITED.match(how)
        oom = 1 if how == _OUT_OF_MEMORY else None  # SLURM's cgroup counted it: certain
        signo = signal.SIGKILL if oom else _SIGNALS.get(how.removesuffix(" (core dumped)"))
        if exited is None and signo is None:
            continue
        for rank in _ranks(spec):
            code = int(exited.group(1)) if exited else None
            # when: unknown, after the records
            ends[rank] = RankEnd(rank, code, signo, math.inf, oom_kills=oom)
            nodes[rank] = node
    return ends, nodes


def _read(path: Path, what: str) -> str:
    try:
        return read_regular(path, what, LOG_MAX_BYTES, follow=False).decode(errors="replace")
    except SmmpiError:
        return ""


def failure_line(st: JobState) -> str | None:
    """``rank R (NODE) failed: ...`` for a job that failed; None when no rank is to blame (a job
    cancelled or out of time was stopped from outside: its ranks were killed, none failed)."""
    if not st.work_dir or st.state not in BLAMED:
        return None
    output = _read(Path(st.work_dir) / f"slurm-{st.job_id}.out", "job output")
    srun_ends, nodes = task_ends(output)
    ends = Ends.read(Path(st.work_dir) / "records")
    ends = dataclasses.replace(ends, ends={**srun_ends, **ends.ends})
    blame = ends.blame()
    if blame is None:
        return None
    logs = rank_logs(st.work_dir)
    node = {r: n for r, n, _ in logs}.get(blame.rank) or nodes.get(blame.rank)
    phrase, scan = blame.phrase, FailureScan()
    for text in [output, *(_read(path, "rank log") for _, _, path in logs)]:
        for line in text.splitlines():  # a known pitfall, as a local run names it
            scan.feed_untagged(line)
    if scan.found and not crashed(ends, blame.rank):
        phrase = say("pitfall", phrase=phrase, note=scan.note(scan.found[0]))
    return ranked(blame.rank, node or "unknown node", printable(phrase))
