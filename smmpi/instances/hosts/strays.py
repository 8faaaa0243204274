"""What ranks leave behind on an instance: killed once their rank has ended, and named.

The instance's first process (PID 1 of its PID namespace, instance.py) inherits every
process that loses its parent there: the daemonized orted, and what a rank started and
left. Once that rank has recorded its end (``rank-R.exit`` in the run's records folder),
what it left is killed, so no leftover keeps a finished run's output open, and named in
``strays-HOST.json`` there, which the run reports.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import time
from dataclasses import dataclass, field


def _children() -> list[int]:
    kids: list[int] = []
    with contextlib.suppress(OSError):
        for task in os.listdir("/proc/self/task"):
            with contextlib.suppress(OSError, ValueError):
                with open(f"/proc/self/task/{task}/children", encoding="ascii") as f:
                    kids += [int(k) for k in f.read().split()]
    return kids


def _rank_of(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            env = dict(e.partition(b"=")[::2] for e in f.read().split(b"\0"))
    except OSError:
        return None
    rank = env.get(b"OMPI_COMM_WORLD_RANK") or env.get(b"PMIX_RANK") or b""
    return int(rank) if rank.isdigit() else None


def _command(pid: int) -> str:
    """Process ``pid``'s command line ("" for a zombie, or a process that has ended)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


@dataclass
class Strays:
    """Processes left by the ranks of instance ``host``, which this process has inherited."""

    records: str
    host: str
    killed: list[dict[str, object]] = field(default_factory=list)

    def sweep(self) -> None:
        for pid in _children():
            rank = _rank_of(pid)
            if rank is None or not os.path.exists(f"{self.records}/rank-{rank}.exit"):
                continue
            command = _command(pid)
            if command:  # else a zombie: reaped, not killed
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
                self.killed.append({"rank": rank, "pid": pid, "command": command})
                self._write()

    def record_init_end(self, signo: int, sender: int) -> None:
        """``init-HOST.json``: the instance's first process ends on signal ``signo`` from
        process ``sender`` (of the instance: its rank, and what it runs)."""
        row: dict[str, object] = {"host": self.host, "signal": signo, "pid": sender}
        row.update(rank=_rank_of(sender), command=_command(sender), time=time.time())
        path = os.path.join(self.records, f"init-{self.host}.json")
        with contextlib.suppress(OSError):
            with open(path + ".tmp", "w", encoding="utf-8") as f:
                f.write(json.dumps(row))
            os.replace(path + ".tmp", path)

    def _write(self) -> None:
        path = os.path.join(self.records, f"strays-{self.host}.json")
        with contextlib.suppress(OSError):
            with open(path + ".tmp", "w", encoding="utf-8") as f:
                f.write(json.dumps(self.killed))
            os.replace(path + ".tmp", path)
