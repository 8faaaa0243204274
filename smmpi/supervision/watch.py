"""The two small processes that own a local run's processes (run by path: standard library only).

``python -I -S watch.py run --parent PID --record DIR [--ranks N] [--remove DIR]
[--cpu-group G] -- COMMAND...``
  The run's reaper (its code is ``reaper.py``, beside this file). It is a child
  subreaper (``PR_SET_CHILD_SUBREAPER``): a process whose parent dies is
  re-parented here, whatever its session, instead
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
  or signal, and when) in ``$SMMPI_STACK_DIR`` when it ends; and ends the same
  way, so mpirun sees what it would have seen. Signals mpirun sends reach the
  rank through the process group they share; a signal sent to this process
  alone is passed on only to a rank that left that group (no signal says
  whether it came to the group or to one process, and a rank in the group has
  had it already). It imports only built-in modules: one starts per rank.

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


def rank_main(host_file: str, command: list[str]) -> None:
    with open(host_file, "rb") as f:
        for entry in f.read().split(b"\0"):
            name, eq, value = entry.partition(b"=")
            if eq:
                os.environb[name] = value
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
    row = (
        f'{{"rank": {rank if rank.isdigit() else "null"}, "pid": {child}, '
        f'"code": {"null" if code is None else code}, '
        f'"signal": {"null" if sig is None else sig}, "time": {time.time()!r}, '
        f'"eth0_route": {"true" if eth0_routed() else "false"}}}'
    )
    folder = os.environ.get("SMMPI_STACK_DIR")
    if folder:
        write_file(os.path.join(folder, f"rank-{rank}.exit"), row)
    end_like(status)


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
    # the reaper, beside this file; it reads this module's helpers as ``watch``
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    sys.modules.setdefault("watch", sys.modules[__name__])
    import reaper  # type: ignore[import-not-found]  # (the package's smmpi.supervision.reaper)

    opts = argv[2:split]
    reaper.run_main(dict(zip(opts[::2], opts[1::2], strict=False)), argv[split + 1 :])


if __name__ == "__main__":
    main(sys.argv)
