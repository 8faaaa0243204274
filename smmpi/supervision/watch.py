"""The two small processes that own a local run's processes (run by path: standard library only).

``python -I -S watch.py run --parent PID --record DIR [--ranks N] [--remove DIR]
[--cpu-group G] -- COMMAND...``
  The run's reaper. It is a child subreaper (``PR_SET_CHILD_SUBREAPER``): a
  process whose parent dies is re-parented here, whatever its session, instead
  of to init. COMMAND (mpirun, or a launcher around it) dies with it
  (``PR_SET_PDEATHSIG``). It dies with its parent PID (smmpi), even when smmpi
  is killed with SIGKILL: the kernel tells it, and it ends every process and
  removes the ``--remove`` folder (a throwaway run's host trees). A process
  re-parented here is a stray once its rank has ended (``DIR/rank-R.exit``; a
  stray whose rank is unknown, once all N ranks have ended, or COMMAND): it is
  killed and named in ``DIR/strays.json``. With ``--cpu-group``, it first makes
  that CPU cgroup and moves into it, and removes it once every process has
  ended (see cpu_share.py). SIGTERM, SIGINT or SIGHUP: SIGTERM
  to COMMAND, a grace period, then SIGKILL to every process left.

``python -I -S watch.py rank HOST_FILE -- COMMAND...``
  What mpirun starts in place of each rank. It sets its emulated host's
  variables from HOST_FILE (``NAME=value`` entries separated by NUL bytes), so
  mpirun's command line carries no ``-x`` per host; starts the rank, which
  holds the read end of a pipe only this process writes to (if this process is
  killed first, the rank's hook records it); writes ``rank-R.exit`` (exit code
  or signal, and when; after a SIGKILL, the OOM kills its memory cgroup counted
  meanwhile) in ``$SMMPI_STACK_DIR`` when it ends; and ends the same
  way, so mpirun sees what it would have seen. Signals mpirun sends reach the
  rank through the process group they share; a signal sent to this process
  alone is passed on. It imports only built-in modules: one starts per rank.

Both exit as COMMAND did: the same code, or the same signal.
"""

from __future__ import annotations

import os
import sys
import time

TYPE_CHECKING = False  # not ``typing``'s: importing typing costs more than the rest

if TYPE_CHECKING:
    import signal
    from collections.abc import Callable
    from types import FrameType
else:  # the C module: ``signal`` imports enum, and one of these starts for every rank
    import _signal as signal

PR_SET_PDEATHSIG, PR_SET_CHILD_SUBREAPER = 1, 36
STOP = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
FORWARD = (*STOP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2)
GRACE = 3.0  # seconds mpirun gets to stop its ranks before everything is killed
POLL = 0.25  # seconds between the reaper's looks for strays
LAUNCHER_FD = "SMMPI_LAUNCHER_FD"  # the rank's end of the pipe to its launcher (this process)


def prctl(option: int, value: int) -> None:
    import ctypes  # the reaper only: ranks start faster without it

    ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0)


def start(argv: list[str], parent: int, dies_with_parent: bool, keep: int = -1) -> int:
    """Fork and exec ``argv`` with default signals (and killed if ``parent`` dies first).

    ``keep``: a file descriptor the child keeps open across exec.
    """
    pid = os.fork()
    if pid:
        return pid
    try:
        if keep >= 0:
            os.set_inheritable(keep, True)
        for sig in FORWARD:
            signal.signal(sig, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_SETMASK, [])
        if dies_with_parent:
            prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
            if os.getppid() != parent:
                os._exit(128 + signal.SIGKILL)
        os.execvp(argv[0], argv)
    except OSError as err:
        os.write(2, f"smmpi: cannot start {argv[0]}: {err}\n".encode())
    os._exit(127)


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


def write_file(path: str, text: str) -> None:
    try:
        with open(path + ".tmp", "w", encoding="utf-8") as f:
            f.write(text)
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


def rank_id() -> str:
    return os.environ.get("OMPI_COMM_WORLD_RANK") or os.environ.get("PMIX_RANK") or "unknown"


def eth0_routed() -> bool:
    """eth0 has a route in this process's network namespace (an isolated instance's): a
    rank that ends once its instance lost its network says so in its record."""
    try:
        with open("/proc/self/net/route", encoding="ascii", errors="replace") as table:
            return any(line.split()[:1] == ["eth0"] for line in table)
    except OSError:
        return True


def oom_kills() -> int | None:
    """The OOM kills this process's memory cgroup has counted (cgroup v2 ``memory.events``,
    v1 ``memory.oom_control``); None where no such file can be read."""
    try:
        with open("/proc/self/cgroup", encoding="ascii", errors="replace") as f:
            rows = [line.rstrip("\n").split(":", 2) for line in f]
    except OSError:
        return None
    files = []
    for row in rows:
        if len(row) == 3 and not row[1]:
            files.append(f"/sys/fs/cgroup{row[2].rstrip('/')}/memory.events")
        elif len(row) == 3 and "memory" in row[1].split(","):
            files.append(f"/sys/fs/cgroup/memory{row[2].rstrip('/')}/memory.oom_control")
    for path in files:
        try:
            with open(path, encoding="ascii", errors="replace") as f:
                for line in f:
                    if line.startswith("oom_kill "):
                        return int(line.split()[1])
        except (OSError, ValueError):
            continue
    return None


def rank_main(host_file: str, command: list[str]) -> None:
    with open(host_file, "rb") as f:
        for entry in f.read().split(b"\0"):
            name, eq, value = entry.partition(b"=")
            if eq:
                os.environb[name] = value
    ooms = oom_kills()  # the count before the rank: a SIGKILL after it says what killed it
    read_end, _write_end = os.pipe()  # the write end closes when this process ends
    os.environ[LAUNCHER_FD] = str(read_end)
    child = start(command, os.getpid(), dies_with_parent=False, keep=read_end)
    os.close(read_end)
    del os.environ[LAUNCHER_FD]
    for forwarded in FORWARD:
        signal.signal(forwarded, forwarder(child))
    _, status = os.waitpid(child, 0)
    code = os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else None
    sig = os.WTERMSIG(status) if os.WIFSIGNALED(status) else None
    rank = rank_id()
    after = oom_kills() if sig == signal.SIGKILL and ooms is not None else None
    oom = "null" if after is None or ooms is None else after - ooms
    row = (
        f'{{"rank": {rank if rank.isdigit() else "null"}, "pid": {child}, '
        f'"code": {"null" if code is None else code}, '
        f'"signal": {"null" if sig is None else sig}, "time": {time.time()!r}, '
        f'"eth0_route": {"true" if eth0_routed() else "false"}, "oom_kills": {oom}}}'
    )
    folder = os.environ.get("SMMPI_STACK_DIR")
    if folder:
        write_file(os.path.join(folder, f"rank-{rank}.exit"), row)
    end_like(status)


# --- the run's reaper --------------------------------------------------------


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


def main(argv: list[str]) -> None:
    if len(argv) < 4 or "--" not in argv or argv[1] not in ("run", "rank"):
        sys.exit(
            "usage: watch.py run --parent PID --record DIR [--ranks N] [--remove DIR]"
            " [--cpu-group G] -- COMMAND\n"
            "       watch.py rank HOST_FILE -- COMMAND..."
        )
    split = argv.index("--")
    if argv[1] == "rank":
        rank_main(argv[2], argv[split + 1 :])
    opts = argv[2:split]
    run_main(dict(zip(opts[::2], opts[1::2], strict=False)), argv[split + 1 :])


if __name__ == "__main__":
    main(sys.argv)
