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
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import IO, Any

from smmpi.runners.hosts import kernel, plan
from smmpi.runners.hosts.pod import SETUP_FAILED

__all__ = [
    "SETUP_FAILED",
    "Pod",
    "agent_path",
    "command",
    "pod_env",
    "quick_reason",
    "start",
    "unavailable_reason",
]

_SBIN = ("/usr/sbin", "/sbin", "/usr/bin", "/bin")
# The pod runs without site-packages (it needs the standard library and smmpi only).
_BOOT = (
    "import sys; sys.path.insert(0, sys.argv[1]); "
    "from smmpi.runners.hosts.pod import main; sys.exit(main(sys.argv[1:]))"
)
_ROOT = str(Path(__file__).resolve().parents[3])


@dataclass(frozen=True)
class Pod:
    """The instances of one run. ``run_dir`` exists and is this run's own folder."""

    hosts: tuple[str, ...]
    opt_ml: tuple[Path, ...]  # each host's tree, seen as /opt/ml inside it
    run_dir: Path
    # Each host's own environment, which commands the launch agent starts there get (as
    # an ssh session on a SageMaker worker does); empty: they inherit mpirun's.
    host_env: tuple[Mapping[str, str], ...] = ()


def tool(name: str) -> str | None:
    """``ip`` and ``nsenter``: on PATH, or in the sbin folders a user's PATH may lack."""
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


def _private(path: Path, text: str) -> None:
    """A file only its owner reads (it holds environments)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)


def _spec(pod: Pod, argv: Sequence[str], env: Mapping[str, str], cwd: str) -> dict[str, Any]:
    hosts_file = pod.run_dir / "hosts"
    hosts_file.write_text(plan.hosts_file(pod.hosts))
    env_dir = None
    if pod.host_env:
        env_dir = pod.run_dir / "env"
        env_dir.mkdir(exist_ok=True)
        for host, host_env in zip(pod.hosts, pod.host_env, strict=True):
            _private(env_dir / host, plan.env_file(host_env))
    return {
        "hosts": list(pod.hosts),
        "opt_ml": [str(p) for p in pod.opt_ml],
        "run_dir": str(pod.run_dir),
        "hosts_file": str(hosts_file),
        "env_dir": str(env_dir) if env_dir else None,
        "argv": list(argv),
        "env": dict(env),
        "cwd": cwd,
        "userns": needs_user_namespace(),
        "ip": tool("ip") or "ip",
        "nsenter": tool("nsenter") or "nsenter",
    }


def _die_with_smmpi() -> None:
    kernel.die_with_parent(signal.SIGKILL)


def command(pod: Pod, argv: Sequence[str], env: Mapping[str, str], cwd: str) -> list[str]:
    """The argv of the pod's outer process (writes its spec into the run folder).

    For a caller that starts processes its own way (a reaper): run it with
    PR_SET_PDEATHSIG set, and with :func:`pod_env` as its environment.
    """
    spec_file = pod.run_dir / "pod.json"
    _private(spec_file, json.dumps(_spec(pod, argv, env, cwd)))
    return [sys.executable, "-S", "-E", "-c", _BOOT, _ROOT, str(spec_file)]


def pod_env() -> dict[str, str]:
    """The pod's own environment (the command's is in its spec): a PATH to find ip and nsenter."""
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
    return subprocess.Popen(
        command(pod, argv, env, cwd),
        stdin=stdin,
        stdout=stdout,
        stderr=stderr,
        env=pod_env(),
        preexec_fn=_die_with_smmpi,  # the pod dies with smmpi, however smmpi ends
        start_new_session=new_session,
    )


def _namespaces_refused() -> str | None:
    """Try, in a forked child, to create the namespaces a pod needs (a few milliseconds)."""
    flags = kernel.CLONE_NEWNET | kernel.CLONE_NEWUTS | kernel.CLONE_NEWNS
    if needs_user_namespace():
        flags |= kernel.CLONE_NEWUSER
    read_end, write_end = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover (runs in the child)
        code = 0
        try:
            kernel.unshare(flags)
        except OSError as err:
            os.write(write_end, str(err).encode())
            code = 1
        os._exit(code)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        message = pipe.read().decode(errors="replace")
    os.waitpid(child, 0)
    return message or None


@lru_cache(maxsize=1)
def quick_reason() -> str | None:
    """None when this machine lets smmpi create isolated hosts; else one line saying why not.

    Cheap enough to run before every run: the tools, the paths and one unshare(2).
    """
    if not sys.platform.startswith("linux"):
        return f"isolated hosts need Linux namespaces; this is {sys.platform}"
    for name in ("ip", "nsenter"):
        if tool(name) is None:
            return f"`{name}` not found (iproute2 / util-linux)"
    for path in ("/opt", "/etc/hosts"):
        if not os.path.exists(path):
            return f"{path} does not exist, so it cannot be overlaid per instance"
    refused = _namespaces_refused()
    if refused:
        who = "root" if not needs_user_namespace() else "an unprivileged user"
        return f"the kernel refuses namespaces to {who} here ({refused})"
    return None


def unavailable_reason() -> str | None:
    """:func:`quick_reason`, then a real two-instance pod whose agent hops to algo-2."""
    reason = quick_reason()
    if reason:
        return reason
    with tempfile.TemporaryDirectory(prefix="smmpi-probe-") as tmp:
        run_dir = Path(tmp)
        trees = (run_dir / "algo-1", run_dir / "algo-2")
        for tree in trees:
            tree.mkdir()
        pod = Pod(("algo-1", "algo-2"), trees, run_dir)
        on_algo_2 = "'test \"$(hostname)\" = algo-2'"
        hop = f'test "$(hostname)" = algo-1 && {agent_path(pod)} algo-2 {on_algo_2}'
        probe = start(
            pod, ["/bin/sh", "-c", hop], {"PATH": "/usr/bin:/bin"}, "/", stderr=subprocess.PIPE
        )
        _, err = probe.communicate(timeout=60)
    if probe.returncode == 0:
        return None
    lines = err.decode(errors="replace").strip().splitlines()
    return lines[-1] if lines else f"a two-instance probe exited with {probe.returncode}"
