"""The run's reaper (``watch.py run``; standard library only): it owns every process of a
local run, kills strays once their rank has ended, and ends them all when the run ends or
smmpi dies. ``watch.py`` says what it does; this file holds how.

Run by path (``python -I -S watch.py run ...``), it reads the helpers it shares with the
ranks' watcher from ``watch`` (the running script); imported as part of the package, from
:mod:`smmpi.supervision.watch`.
"""

from __future__ import annotations

import os
import time

TYPE_CHECKING = False  # not ``typing``'s: importing typing costs more than the rest

if TYPE_CHECKING:
    import signal

    from smmpi.supervision.watch import (
        PR_SET_CHILD_SUBREAPER,
        PR_SET_PDEATHSIG,
        STOP,
        end_like,
        prctl,
        start,
        write_file,
    )
else:
    import _signal as signal

    try:  # run by path: the running watch.py
        from watch import (
            PR_SET_CHILD_SUBREAPER,
            PR_SET_PDEATHSIG,
            STOP,
            end_like,
            prctl,
            start,
            write_file,
        )
    except ImportError:  # imported as part of the package
        from smmpi.supervision.watch import (
            PR_SET_CHILD_SUBREAPER,
            PR_SET_PDEATHSIG,
            STOP,
            end_like,
            prctl,
            start,
            write_file,
        )

GRACE = 3.0  # seconds mpirun gets to stop its ranks before everything is killed
POLL = 0.25  # seconds between the reaper's looks for strays


def children(pid: int, recursive: bool) -> list[int]:
    """Children (or all descendants) of ``pid``, from the kernel's /proc/PID/task/*/children."""
    found: list[int] = []
    todo = [pid]
    while todo:
        current = todo.pop()
        kids: list[int] = []
        try:
            for task in os.listdir(f"/proc/{current}/task"):
                with open(f"/proc/{current}/task/{task}/children", encoding="ascii") as f:
                    kids += [int(k) for k in f.read().split()]
        except OSError:
            pass
        found += kids
        if recursive:
            todo += kids
    return found


def kill(pids: list[int], sig: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except OSError:
            pass


def reap(keep: int = 0) -> tuple[bool, int | None]:
    """Collect ended children: (some child is alive, the status of child ``keep`` if it ended)."""
    kept = None
    try:
        while True:
            pid, status = os.waitpid(-1, os.WNOHANG)
            if not pid:
                return True, kept
            if pid == keep:
                kept = status
    except ChildProcessError:
        return False, kept


class Strays:
    """Processes re-parented here: killed once the rank that started them has ended."""

    def __init__(self, record: str, ranks: int | None) -> None:
        self.record, self.ranks = record, ranks
        self.killed: list[dict[str, object]] = []

    def rank_of(self, pid: int) -> int | None:
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                env = dict(e.partition(b"=")[::2] for e in f.read().split(b"\0"))
        except OSError:
            return None
        rank = env.get(b"OMPI_COMM_WORLD_RANK") or env.get(b"PMIX_RANK") or b""
        return int(rank) if rank.isdigit() else None

    def ended(self, rank: int | None) -> bool:
        if rank is not None:
            return os.path.exists(os.path.join(self.record, f"rank-{rank}.exit"))
        if self.ranks is None:
            return False
        return all(self.ended(r) for r in range(self.ranks))

    def collect(self, pids: list[int], everything: bool) -> None:
        """Kill (and name) those of ``pids`` whose rank has ended (all if ``everything``)."""
        for pid in pids:
            rank = self.rank_of(pid)
            if everything or self.ended(rank):
                try:
                    with open(f"/proc/{pid}/cmdline", "rb") as f:
                        cmd = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
                except OSError:
                    continue
                if not cmd:  # a zombie: it has ended already, and reap() collects it
                    continue
                self.killed.append({"rank": rank, "pid": pid, "command": cmd})
                kill([pid], signal.SIGKILL)

    def write(self) -> None:
        if self.killed:
            import json

            write_file(os.path.join(self.record, "strays.json"), json.dumps(self.killed))


def wait_command(child: int, parent: int, strays: Strays) -> tuple[int | None, int | None]:
    """Until COMMAND ends: (its status, or the stop signal / parent's death that came first)."""
    me = os.getpid()
    while True:
        got = signal.sigtimedwait([*STOP, signal.SIGCHLD], POLL)
        if got is not None and got.si_signo in STOP:
            return None, got.si_signo
        if os.getppid() != parent:
            return None, signal.SIGTERM
        _, status = reap(child)
        if status is not None:
            return status, None
        strays.collect([p for p in children(me, recursive=False) if p != child], False)


def stop_command(child: int, status: int | None) -> int | None:
    """SIGTERM COMMAND and wait a grace period for it; its status if it ended."""
    if status is not None:
        return status  # once reaped, its pid may belong to another process
    kill([child], signal.SIGTERM)
    deadline = time.monotonic() + GRACE
    while time.monotonic() < deadline:
        _, status = reap(child)
        if status is not None:
            return status
        time.sleep(0.05)
    return None


def kill_all(me: int) -> None:
    for _ in range(200):  # a dying process may still start others
        pids = children(me, recursive=True)
        if not pids:
            break
        kill(pids, signal.SIGKILL)
        time.sleep(0.01)
        reap()
    while reap()[0]:
        time.sleep(0.01)


def cpu_group(group: str, me: int, leave: bool = False) -> bool:
    """Make the run's CPU cgroup and move in; or (``leave``) move back out and remove it."""
    try:
        if not leave:
            os.mkdir(group, 0o755)
        home = os.path.dirname(group) if leave else group
        with open(os.path.join(home, "cgroup.procs"), "w", encoding="ascii") as f:
            f.write(str(me))
        if not leave:
            return True
    except OSError:
        pass
    try:
        os.rmdir(group)  # empty now (or made here, never entered)
    except OSError:
        pass  # a process is still in it, or a later run's sweep has removed it
    return False


def run_main(opts: dict[str, str], command: list[str]) -> None:
    parent = int(opts["--parent"])
    signal.pthread_sigmask(signal.SIG_BLOCK, [*STOP, signal.SIGCHLD])
    prctl(PR_SET_CHILD_SUBREAPER, 1)
    prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    me = os.getpid()
    group = opts.get("--cpu-group")
    if group and not cpu_group(group, me):
        group = None
    child = start(command, me, dies_with_parent=True)
    strays = Strays(opts["--record"], int(opts["--ranks"]) if "--ranks" in opts else None)
    status: int | None = None
    stopped: int | None = signal.SIGTERM  # the parent died before we were ready
    if os.getppid() == parent:
        status, stopped = wait_command(child, parent, strays)
    if status is not None:  # COMMAND ended: whatever is left is a stray
        strays.collect(children(me, recursive=True), True)
    status = stop_command(child, status)
    kill_all(me)
    if group:
        cpu_group(group, me, leave=True)
    strays.write()
    if os.getppid() != parent and "--remove" in opts:
        import shutil

        shutil.rmtree(opts["--remove"], ignore_errors=True)
    end_like(status if status is not None else (128 + (stopped or signal.SIGKILL)) << 8)
