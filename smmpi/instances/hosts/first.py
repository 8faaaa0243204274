"""An instance's own PID namespace, and its first process (PID 1 there).

The holder (instance.py) unshares the PID namespace and forks the first process before
any other enters it. That process mounts the instance's /proc (with what a container may
not write read-only), makes the ids inside start at the instance's offset (so that ids
ranks record are unique in the run), then reaps every process that loses its parent
in the instance and kills what ranks that have ended left behind (strays.py).

It ends, as a container ends with its first process, on a signal that a process of the
instance sends it (SIGTERM, SIGINT, SIGHUP, SIGQUIT or SIGUSR1; SIGKILL from inside its
namespace does not reach it), and then records which process sent it, and the rank
it belongs to (``init-HOST.json``): every process of the instance ends with it.
"""

from __future__ import annotations

import contextlib
import os
import signal

from smmpi.instances.hosts import kernel
from smmpi.instances.hosts.strays import Strays

#: /proc entries a container gets read-only (Docker's list), and those it cannot read at all.
PROC_READ_ONLY = ("bus", "fs", "irq", "sys", "sysrq-trigger")
PROC_MASKED = ("kcore", "keys", "timer_list", "sched_debug", "latency_stats")


def protect_proc() -> None:
    """Make /proc what a container gets: its kernel settings read-only, some files hidden."""
    for name in PROC_READ_ONLY:
        path = f"/proc/{name}"
        if os.path.exists(path):
            kernel.mount(path, path, None, kernel.MS_BIND | kernel.MS_REC)
            kernel.read_only(path)
    for name in PROC_MASKED:
        path = f"/proc/{name}"
        if os.path.exists(path):
            kernel.mount("/dev/null", path, None, kernel.MS_BIND)


#: What ends the first process (the pod's relayed signals: their handlers are inherited).
ENDING = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1)
SWEEP_SECONDS = 0.25  # between looks for processes left by ranks that have ended


def _init(ready: int, first_pid: int, strays: Strays | None) -> None:
    """PID 1 of the instance (in the forked child): its /proc, then it reaps orphans and
    kills what ranks that have ended left behind."""
    try:
        flags = kernel.MS_NOSUID | kernel.MS_NODEV | kernel.MS_NOEXEC
        kernel.mount("proc", "/proc", "proc", flags)
        if first_pid > 1:
            with open("/proc/sys/kernel/ns_last_pid", "w") as f:
                f.write(str(first_pid - 1))
        protect_proc()
        os.write(ready, b"ok")
    except OSError as err:
        os.write(ready, str(err).encode())
        os._exit(1)
    os.close(ready)
    signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGCHLD, *ENDING])
    while True:
        with contextlib.suppress(ChildProcessError):
            while os.waitpid(-1, os.WNOHANG)[0]:
                pass
        if strays is not None:
            strays.sweep()
        got = signal.sigtimedwait(
            [signal.SIGCHLD, *ENDING], SWEEP_SECONDS if strays is not None else 5.0
        )
        if got is not None and got.si_signo in ENDING:
            if strays is not None and got.si_pid:  # (0: sent from outside the instance)
                strays.record_init_end(got.si_signo, got.si_pid)
            os._exit(128 + got.si_signo)


def start(first_pid: int, strays: Strays | None = None) -> int:
    """A PID namespace for the instance: its PID 1 is forked here, before any other process."""
    kernel.unshare(kernel.CLONE_NEWPID)
    ready_r, ready_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(ready_r)
        _init(ready_w, first_pid, strays)
    os.close(ready_w)
    with os.fdopen(ready_r, "rb") as pipe:
        said = pipe.read().decode(errors="replace")
    if said != "ok":
        raise OSError(f"the instance's first process: {said or 'ended'}")
    return pid
