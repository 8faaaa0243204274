"""The two small processes that own a local run's processes (run by path: standard library only).

``python -I -S watch.py run --parent PID --record DIR [--remove DIR] -- COMMAND...``
  The run's reaper. It is a child subreaper (``PR_SET_CHILD_SUBREAPER``): a
  process whose parent dies is re-parented here, whatever its session, instead
  of to init. COMMAND (mpirun, or a launcher around it) dies with it
  (``PR_SET_PDEATHSIG``). It dies with its parent PID (smmpi), even when smmpi
  is killed with SIGKILL: the kernel tells it, and it ends every process and
  removes the ``--remove`` folder (a throwaway run's host trees). A process
  re-parented here has lost its rank: it is killed at once and named in
  ``DIR/strays.json``, as is anything left when COMMAND ends. SIGTERM, SIGINT
  or SIGHUP: SIGTERM to COMMAND, a grace period, then SIGKILL to all.

``python -I -S watch.py rank HOST_FILE -- COMMAND...``
  What mpirun starts for each rank. It applies its emulated host's variables
  from HOST_FILE (so mpirun's command line has no ``-x`` per host), forks the
  rank (which dies with it) and is the subreaper of what the rank starts. When
  the rank ends, it kills what the rank left running, writes ``rank-R.exit``
  (exit code or signal, time, strays) in the host file's ``record_dir``, and
  ends as the rank did, so mpirun sees what it would have seen. Signals mpirun
  sends reach the rank through the process group they share; a signal sent to
  this process alone is passed on.

Both exit as COMMAND did: the same code, or the same signal. Both start in
about 20 ms (no site-packages import): one runs per rank.
"""

from __future__ import annotations

import ctypes
import json
import os
import shutil
import signal
import sys
import time
from collections.abc import Callable
from types import FrameType

PR_SET_PDEATHSIG, PR_SET_CHILD_SUBREAPER = 1, 36
STOP = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
FORWARD = (*STOP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2)
GRACE = 3.0  # seconds mpirun gets to stop its ranks before everything is killed
STRAY_GRACE = 1.0  # seconds a rank's stray gets between SIGTERM and SIGKILL
POLL = 0.25  # seconds between the reaper's looks for orphans


def prctl(option: int, value: int) -> None:
    ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0)


def start(argv: list[str], parent: int) -> int:
    """Fork and exec ``argv`` with default signals; it is killed if ``parent`` dies first."""
    pid = os.fork()
    if pid:
        return pid
    try:
        for sig in FORWARD:
            signal.signal(sig, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_SETMASK, [])
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != parent:
            os._exit(128 + signal.SIGKILL)
        os.execvp(argv[0], argv)
    except OSError as err:
        os.write(2, f"smmpi: cannot start {argv[0]}: {err}\n".encode())
    os._exit(127)


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


def describe(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            cmd = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        cmd = "?"
    return f"{cmd} (pid {pid})"


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


def kill_tree(me: int, first: int = signal.SIGKILL, grace: float = 0.0) -> None:
    """Signal every descendant, wait up to ``grace``, then SIGKILL until none is left."""
    if first != signal.SIGKILL:
        kill(children(me, recursive=True), first)
        deadline = time.monotonic() + grace
        while reap()[0] and time.monotonic() < deadline:
            time.sleep(0.02)
    for _ in range(200):  # a dying process may still start others
        pids = children(me, recursive=True)
        if not pids:
            break
        kill(pids, signal.SIGKILL)
        time.sleep(0.01)
        reap()
    while reap()[0]:
        time.sleep(0.01)


def end_like(status: int) -> None:
    """Exit with the child's code, or die of the child's signal."""
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        if sig not in (signal.SIGKILL, signal.SIGSTOP):
            signal.signal(sig, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_SETMASK, [])
        os.kill(os.getpid(), sig)
        time.sleep(1.0)
        os._exit(128 + sig)
    os._exit(os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 1)


def write_json(path: str, content: object) -> None:
    try:
        with open(path + ".tmp", "w", encoding="utf-8") as f:
            json.dump(content, f)
        os.replace(path + ".tmp", path)
    except OSError:
        pass  # the run's folder is gone: the run is over anyway


# --- the rank's parent -------------------------------------------------------


def forwarder(child: int) -> Callable[[int, FrameType | None], None]:
    def forward(signum: int, frame: FrameType | None) -> None:
        try:  # a signal sent to our process group has already reached the rank
            if os.getpgid(child) != os.getpgid(0):
                os.kill(child, signum)
        except OSError:
            pass

    return forward


def rank_strays(me: int) -> list[str]:
    """Kill what the rank left running (all of it was re-parented here) and name it."""
    if not reap()[0]:
        return []  # the common case: nothing left
    described = [describe(pid) for pid in children(me, recursive=True)]
    kill_tree(me, signal.SIGTERM, STRAY_GRACE)
    return described


def rank_main(host_file: str, command: list[str]) -> None:
    with open(host_file, encoding="utf-8") as f:
        host = json.load(f)
    os.environ.update(host["env"])
    prctl(PR_SET_CHILD_SUBREAPER, 1)
    prctl(PR_SET_PDEATHSIG, signal.SIGKILL)  # mpirun's end is ours, and so the rank's
    me = os.getpid()
    child = start(command, me)
    for sig in FORWARD:
        signal.signal(sig, forwarder(child))
    _, status = os.waitpid(child, 0)
    when = time.time()
    strays = rank_strays(me)
    rank = os.environ.get("OMPI_COMM_WORLD_RANK") or os.environ.get("PMIX_RANK") or "unknown"
    row = {
        "rank": int(rank) if rank.isdigit() else None,
        "pid": child,
        "code": os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else None,
        "signal": os.WTERMSIG(status) if os.WIFSIGNALED(status) else None,
        "time": when,
        "strays": strays,
    }
    write_json(os.path.join(host["record_dir"], f"rank-{rank}.exit"), row)
    end_like(status)


# --- the run's reaper --------------------------------------------------------


def wait_command(child: int, parent: int, strays: list[str]) -> tuple[int | None, int | None]:
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
        orphans = [pid for pid in children(me, recursive=False) if pid != child]
        strays += [describe(pid) for pid in orphans]
        kill(orphans, signal.SIGKILL)


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


def run_main(opts: dict[str, str], command: list[str]) -> None:
    parent = int(opts["--parent"])
    signal.pthread_sigmask(signal.SIG_BLOCK, [*STOP, signal.SIGCHLD])
    prctl(PR_SET_CHILD_SUBREAPER, 1)
    prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    me = os.getpid()
    child = start(command, me)
    strays: list[str] = []
    status: int | None = None
    stopped: int | None = signal.SIGTERM  # the parent died before we were ready
    if os.getppid() == parent:
        status, stopped = wait_command(child, parent, strays)
    if status is not None:  # COMMAND ended: whatever is left is a stray
        strays += [describe(pid) for pid in children(me, recursive=True)]
    status = stop_command(child, status)
    kill_tree(me)
    if strays:
        write_json(os.path.join(opts["--record"], "strays.json"), strays)
    if os.getppid() != parent and "--remove" in opts:
        shutil.rmtree(opts["--remove"], ignore_errors=True)
    end_like(status if status is not None else (128 + (stopped or signal.SIGKILL)) << 8)


def main(argv: list[str]) -> None:
    if len(argv) < 4 or "--" not in argv or argv[1] not in ("run", "rank"):
        sys.exit(
            "usage: watch.py run --parent PID --record DIR [--remove DIR] -- COMMAND...\n"
            "       watch.py rank HOST_FILE -- COMMAND..."
        )
    split = argv.index("--")
    if argv[1] == "rank":
        rank_main(argv[2], argv[split + 1 :])
    opts = argv[2:split]
    run_main(dict(zip(opts[::2], opts[1::2], strict=False)), argv[split + 1 :])


if __name__ == "__main__":
    main(sys.argv)
