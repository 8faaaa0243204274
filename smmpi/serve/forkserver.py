"""A job's instances as serve prepares them: ``python -m smmpi.serve.forkserver WORK FD``.

serve starts one as a job starts (SageMaker's ``Starting``: the instances are prepared). It
imports the local runner once and says ``ready`` on descriptor FD, its end of a socket pair
whose other end serve holds (:mod:`.forked`). Each job it is given runs in a worker forked
from it (:mod:`.worker`), so a job that reuses a warm pool, whose fork server was kept with
the pool, starts without preparing anything. No job runs in the fork server itself: every
worker starts from the state its imports left, never from another job's.

Messages, one a packet (``SOCK_SEQPACKET``):
- serve: JSON ``{"spec": PATH, "env": {NAME: VALUE}}`` with two descriptors, the job's stdout
  and stderr (the job's variables travel in memory, never through a file);
- the fork server: ``pid N`` once the worker is forked, ``exit CODE`` once it ended (CODE as
  :mod:`subprocess` gives it: the signal's number, negated, for a signal).

It ends when serve closes its end (a job without a pool ends, a pool ends, serve stops or
dies), and a worker it is running dies with it (``PR_SET_PDEATHSIG``). SIGINT (a terminal's
Ctrl-C, which serve answers by stopping its jobs) is left to serve.
"""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import sys
import traceback
from typing import Any, NoReturn

MESSAGE = 1 << 20  # the largest request: a job's variables


def _child(sock: socket.socket, request: dict[str, Any], fds: list[int]) -> NoReturn:
    """In the fork: the job's descriptors and variables, then the worker."""
    code = 1
    try:
        sock.close()
        from smmpi.instances.hosts.kernel import die_with_parent
        from smmpi.serve import worker

        die_with_parent(signal.SIGKILL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        null = os.open(os.devnull, os.O_RDONLY)
        for target, fd in ((0, null), (1, fds[0]), (2, fds[1])):
            os.dup2(fd, target)
            os.close(fd)
        os.environ.update(request["env"])
        worker.main(request["spec"])
        code = 0
    except SystemExit as end:
        code = end.code if isinstance(end.code, int) else 1
    except BaseException:
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def _wait(sock: socket.socket, pid: int) -> int | None:
    """The worker's exit code; None when serve closed its end first (the worker is killed)."""
    pidfd = os.pidfd_open(pid)
    try:
        while True:
            ready, _, _ = select.select([sock.fileno(), pidfd], [], [])
            if pidfd in ready:
                _, status = os.waitpid(pid, 0)
                return os.waitstatus_to_exitcode(status)
            if not sock.recv(MESSAGE):  # serve is gone: nothing outlives it
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                return None
    finally:
        os.close(pidfd)


def serve_jobs(sock: socket.socket) -> int:
    """Fork a worker for each job serve sends, one at a time, until serve closes its end."""
    sock.send(b"ready")
    while True:
        data, fds, _, _ = socket.recv_fds(sock, MESSAGE, 2)
        if not data:
            return 0
        if len(fds) != 2:
            for fd in fds:
                os.close(fd)
            sock.send(b"error: a job needs its stdout and stderr")
            continue
        pid = os.fork()
        if pid == 0:
            _child(sock, json.loads(data), fds)
        for fd in fds:
            os.close(fd)
        sock.send(f"pid {pid}".encode())
        code = _wait(sock, pid)
        if code is None:
            return 0
        sock.send(f"exit {code}".encode())


def main(argv: list[str]) -> int:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    sock = socket.socket(fileno=int(argv[2]))
    # what every job's worker needs, imported once: a reused pool's job starts without it
    import smmpi.api
    import smmpi.runners.local.job
    import smmpi.runners.local.trainer
    import smmpi.serve.worker  # noqa: F401

    return serve_jobs(sock)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
