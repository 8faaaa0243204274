"""serve's side of a fork server (:mod:`.forkserver`): start one, run a job's worker on it.

:class:`ForkServer` is a job's instances being prepared (``Starting``), then kept: by the
job while it runs, by its warm pool after it. :meth:`ForkServer.fork` gives a
:class:`Forked`, the job's worker, which serve polls, signals and reads as it would a
:class:`subprocess.Popen`.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO

FORKSERVER = "smmpi.serve.forkserver"
READY_WITHIN = 300.0  # seconds: a fork server that has not imported smmpi by then is stuck


class ForkServer:
    """A started fork server, and the socket serve talks to it through."""

    def __init__(self, work_root: Path, env: dict[str, str]) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        started = time.monotonic()
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", FORKSERVER, str(work_root), str(theirs.fileno())],
                pass_fds=[theirs.fileno()],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                env=env,
            )
        finally:
            theirs.close()
        self.sock = ours
        self.lock = threading.Lock()
        self._ready()
        self.seconds = time.monotonic() - started  # how long preparing it took

    @property
    def pid(self) -> int:
        return self.proc.pid

    def _ready(self) -> None:
        assert self.proc.stderr is not None
        readable, _, _ = select.select([self.sock], [], [], READY_WITHIN)
        said = self.sock.recv(64) if readable else b""
        if said != b"ready":
            self.close()
            told = self.proc.stderr.read().decode(errors="replace").strip().splitlines()
            why = told[-1] if told else f"exit code {self.proc.returncode}"
            raise OSError(f"the job's instances could not be prepared: {why}")
        self.proc.stderr.close()  # it writes nothing more: its workers have their own

    def fork(self, spec: Path, env: dict[str, str]) -> Forked:
        """The job of ``spec`` in a worker forked for it, with ``env`` added to its variables."""
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        try:
            message = json.dumps({"spec": str(spec), "env": env}).encode()
            socket.send_fds(self.sock, [message], [out_w, err_w])
        finally:
            os.close(out_w)
            os.close(err_w)
        said = self.sock.recv(4096).decode(errors="replace")
        if not said.startswith("pid "):
            os.close(out_r)
            os.close(err_r)
            raise OSError(f"the job's worker could not start: {said or 'its fork server ended'}")
        return Forked(self, int(said[4:]), open(out_r, "rb"), open(err_r, "rb"))

    def close(self) -> None:
        """End it (and a worker it still runs): it ends as its socket closes."""
        self.sock.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


class Forked:
    """A job's worker, forked by a fork server: what serve asks of a worker process."""

    def __init__(self, server: ForkServer, pid: int, stdout: IO[bytes], stderr: IO[bytes]) -> None:
        self.server, self.pid, self.stdout, self.stderr = server, pid, stdout, stderr
        self.returncode: int | None = None
        self.pidfd: int | None = None
        with contextlib.suppress(OSError):  # ended already: its fork server says how
            self.pidfd = os.pidfd_open(pid)

    def poll(self) -> int | None:
        """Its exit code once its fork server said it ended, else None."""
        with self.server.lock:
            if self.returncode is None:
                try:
                    said = self.server.sock.recv(64, socket.MSG_DONTWAIT).decode()
                except BlockingIOError:
                    return None
                except OSError:
                    said = ""
                # a fork server that ended took its worker with it (PR_SET_PDEATHSIG)
                self.returncode = int(said[5:]) if said.startswith("exit ") else -signal.SIGKILL
                if self.pidfd is not None:
                    os.close(self.pidfd)
                    self.pidfd = None
            return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                raise subprocess.TimeoutExpired(f"worker {self.pid}", timeout or 0.0)
            with contextlib.suppress(OSError, ValueError):  # closed meanwhile: poll says
                select.select([self.server.sock], [], [], left)
        assert self.returncode is not None
        return self.returncode

    def send_signal(self, signo: int) -> None:
        with self.server.lock:
            if self.returncode is None and self.pidfd is not None:
                with contextlib.suppress(ProcessLookupError):
                    signal.pidfd_send_signal(self.pidfd, signo)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)
