"""Starting a pod from smmpi: the spec it reads, the process that holds it, and whether it can.

The pod's outer process is started with PR_SET_PDEATHSIG=SIGKILL, so it dies with the
thread of smmpi that started it (call :func:`start` from the main thread), and it takes
every instance with it (see pod.py). Nothing is cleaned at the next start because
nothing can be left over: no named network namespace, no mount outside the pod's own
mount namespaces, no interface in this machine's network namespace.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from smmpi.instances.hosts import kernel, plan
from smmpi.instances.hosts.pod import SETUP_FAILED

__all__ = [
    "SETUP_FAILED",
    "Command",
    "Pod",
    "agent_path",
    "command",
    "pod_env",
    "start",
]

_SBIN = ("/usr/sbin", "/sbin", "/usr/bin", "/bin")
# The pod runs without site-packages (it needs the standard library and smmpi only).
_BOOT = (
    "import sys; sys.path.insert(0, sys.argv[1]); "
    "from smmpi.instances.hosts.pod import main; sys.exit(main(sys.argv[1:]))"
)
_ROOT = str(Path(__file__).resolve().parents[3])
RECORD = "command.json"  # the command the pod runs on algo-1, in the run folder
SOCKETS = ".sockets"  # the folder, in the run folder, of each instance's launch service
SSH_KEYS = ".smmpi/ssh"  # exact mode: where the pod mounts the tmpfs of the run's keys


@dataclass(frozen=True)
class Pod:
    """The instances of one run. ``run_dir`` exists and is this run's own folder."""

    hosts: tuple[str, ...]
    opt_ml: tuple[Path, ...]  # each host's tree, seen as /opt/ml inside it
    run_dir: Path
    # Each host's own environment, which commands the launch agent starts there get (as
    # an ssh session on a SageMaker worker does); empty: they inherit mpirun's.
    host_env: tuple[Mapping[str, str], ...] = ()
    # Folders the instances need from this machine where an instance has its own (/tmp,
    # /root, ...): the run folder, this Python and smmpi are always kept.
    keep: tuple[Path, ...] = ()
    # Where ranks record their end (``rank-R.exit``): each instance's launch service kills
    # what a rank left there once it has ended, and names it (service.py). None: never.
    records: Path | None = None
    # Exact mode: a real sshd on port 22 of each instance (sshd.py) and no launch service:
    # mpirun reaches the instances through ssh, as in the container.
    exact: bool = False
    # Exact mode: what each worker (algo-2..N) runs at start, as algo-1 runs the command
    # (the container's own start); empty: the workers run nothing but sshd.
    worker_argv: tuple[str, ...] = ()
    # Folders (among ``keep``) each instance gets its own copy of, in a tmpfs: what a process
    # writes there stays in its instance (exact mode's toolkit interpreter, where the
    # toolkit pip-installs the code's requirements, as into a container's own image).
    own_copies: tuple[Path, ...] = ()
    # False: the instances use this machine's network, not eth0s on a bridge of their own (a
    # code's install, which reaches the user's package index as a container's does).
    own_network: bool = True
    # Warm instances (smmpi.instances.warm): descriptors the pod inherits, its lease on them,
    # the bridge's network namespace, then each instance's network and UTS namespaces, which
    # it joins instead of making them.
    warm: tuple[int, ...] = ()


@dataclass(frozen=True)
class Command:
    """The pod's outer process: its argv, and the descriptor of its spec it must inherit."""

    argv: list[str]
    spec_fd: int

    def close(self) -> None:
        """Once the process has started (it has its own copy of the descriptor)."""
        os.close(self.spec_fd)


def tool(name: str) -> str | None:
    """``ip``: on PATH, or in the sbin folders a user's PATH may lack."""
    found = shutil.which(name)
    if found:
        return found
    for folder in _SBIN:
        candidate = Path(folder) / name
        if os.access(candidate, os.X_OK):
            return str(candidate)
    return None


def agent_path(pod: Pod) -> Path:
    """Where the pod writes the launch agent (Open MPI's ``plm_rsh_agent``)."""
    return pod.run_dir / plan.LAUNCH_AGENT


def needs_user_namespace() -> bool:
    return os.geteuid() != 0


def _kept(pod: Pod) -> list[str]:
    """Folders the instances see as this machine's, resolved (the instances' mounts are)."""
    python = Path(sys.executable)
    wanted = [pod.run_dir, Path(_ROOT), Path(sys.prefix), Path(sys.base_prefix), *pod.keep]
    wanted += [python.parent, python.resolve().parent]
    return sorted({os.path.realpath(p) for p in wanted})


def _write_agent(pod: Pod, sockets: Path) -> None:
    """Open MPI's ``plm_rsh_agent``: ``agent HOST COMMAND...`` runs COMMAND on HOST."""
    words = [sys.executable, "-I", "-S", str(Path(__file__).with_name("agent.py")), str(sockets)]
    text = f'#!/bin/sh\nexec {" ".join(shlex.quote(w) for w in words)} "$@"\n'
    path = agent_path(pod)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o700)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.chmod(path, 0o755)


def _spec(pod: Pod, argv: Sequence[str], env: Mapping[str, str], cwd: str) -> dict[str, Any]:
    sockets = pod.run_dir / SOCKETS
    keys = pod.run_dir / SSH_KEYS
    if pod.exact:
        keys.mkdir(mode=0o700, parents=True, exist_ok=True)
    else:
        sockets.mkdir(mode=0o700, exist_ok=True)
        _write_agent(pod, sockets)
    # what runs on algo-1, for the record (its environment, which may hold secrets, is not)
    record = json.dumps({"argv": list(argv), "cwd": cwd}, indent=1)
    fd = os.open(pod.run_dir / RECORD, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(record + "\n")
    return {
        "hosts": list(pod.hosts),
        "opt_ml": [str(p) for p in pod.opt_ml],
        "run_dir": str(pod.run_dir),
        "hosts_text": plan.hosts_file(pod.hosts),
        "sockets": "" if pod.exact else str(sockets),
        "ssh_keys": str(keys) if pod.exact else None,
        "worker_argv": list(pod.worker_argv),
        "keep": _kept(pod),
        "own_copies": sorted({os.path.realpath(p) for p in pod.own_copies}),
        "host_env": [dict(e) for e in pod.host_env] or None,
        "records": str(pod.records) if pod.records else None,
        "argv": list(argv),
        "env": dict(env),
        "cwd": cwd,
        "userns": needs_user_namespace(),
        "own_network": pod.own_network,
        "warm": list(pod.warm),
        "ip": tool("ip") or "ip",
    }


def _die_with_smmpi() -> None:
    kernel.die_with_parent(signal.SIGKILL)


def command(pod: Pod, argv: Sequence[str], env: Mapping[str, str], cwd: str) -> Command:
    """The pod's outer process: its argv and the descriptor it reads its spec from.

    The spec (which holds the instances' environments) is in a memory file, never on
    disk. For a caller that starts processes its own way (a reaper): let the process
    inherit ``spec_fd`` (``pass_fds``), run it with PR_SET_PDEATHSIG set and with
    :func:`pod_env` as its environment, then :meth:`Command.close`.
    """
    fd = os.memfd_create("smmpi-pod", os.MFD_CLOEXEC)
    try:
        os.write(fd, json.dumps(_spec(pod, argv, env, cwd)).encode())
    except BaseException:
        os.close(fd)
        raise
    return Command([sys.executable, "-S", "-E", "-c", _BOOT, _ROOT, str(fd)], fd)


def pod_env() -> dict[str, str]:
    """The pod's own environment, and nothing else of this one: a PATH to find ``ip``.

    The command's environment is in the pod's spec; the pod's PID 1 and every process of
    the instances start from these two, never from this process's environment.
    """
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}


def start(
    pod: Pod,
    argv: Sequence[str],
    env: Mapping[str, str],
    cwd: str = "/opt/ml/code",
    *,
    stdin: int | IO[Any] | None = subprocess.DEVNULL,
    stdout: int | IO[Any] | None = None,
    stderr: int | IO[Any] | None = None,
    new_session: bool = False,
) -> subprocess.Popen[bytes]:
    """Set the instances up and run ``argv`` on the first one, in ``cwd`` there.

    The returned process ends with the command's exit status, or :data:`SETUP_FAILED`
    with one line on stderr saying what the kernel refused. SIGTERM, SIGINT, SIGHUP,
    SIGQUIT and SIGUSR1 sent to it reach the command; SIGKILL ends everything.
    """
    pod_command = command(pod, argv, env, cwd)
    try:
        return subprocess.Popen(
            pod_command.argv,
            stdin=stdin,
            stdout=stdout,
            stderr=stderr,
            env=pod_env(),
            pass_fds=(pod_command.spec_fd, *pod.warm),
            preexec_fn=_die_with_smmpi,  # the pod dies with smmpi, however smmpi ends
            start_new_session=new_session,
        )
    finally:
        pod_command.close()
