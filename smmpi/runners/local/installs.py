"""Where a code's installs run: in algo-1, bounded in time and memory, without credentials.

SageMaker's container pip-installs the code's ``requirements.txt`` and its ``setup.py``
inside itself before the program starts: on its own host, with its own /tmp and HOME, with
the container's variables and none of this machine's shell. So do the installs here:
- isolated hosts: in algo-1's namespaces (hostname, /opt/ml, /etc, /tmp, /root), started
  as the run's command is (:mod:`smmpi.instances.hosts.launch`), with a container's
  capabilities, on this machine's network (the install reaches the user's package index,
  as a container reaches the internet; the ranks never share it);
- processes mode: a session of its own under a reaper of the run's kind (``watch.py run``:
  nothing of it outlives smmpi), with the instance's clean environment, and a HOME and TMPDIR
  of its own in the run's folder.
Either way no ``AWS_*`` variable reaches it, pip and the builds it starts may use at most
:data:`MEMORY_CAP` of address space (RLIMIT_AS), and it is killed when the run's
``--timeout`` ends, counted from the run's start. What it printed is kept in a file of the
run's folder, of which only the end is read.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from smmpi.bounded import human
from smmpi.errors import SmmpiError, TimedOut
from smmpi.instances.hosts import launch
from smmpi.mpi_output import printable
from smmpi.platform.layout import host_dirs, launch_env
from smmpi.runners.local.hostfiles import reaper_command
from smmpi.runners.local.isolation import instance_base
from smmpi.runners.local.mpi import preflight
from smmpi.runners.local.pip_lines import pip_reason
from smmpi.toolkit.container import host_env
from smmpi.toolkit.hosts import CONTAINER_ROOT, HostDirs
from smmpi.toolkit.shape import JobShape

#: The address space an install (pip and what it starts) may use.
MEMORY_CAP = 2 * 1024 * 1024 * 1024
_TAIL = 64 * 1024  # the end of pip's output that is read, at most
_LINE = 1000  # pip's line in smmpi's, at most
_LIMIT = (
    "import os, resource, sys; n = int(sys.argv[1]); "
    "resource.setrlimit(resource.RLIMIT_AS, (n, n)); os.execv(sys.argv[2], sys.argv[2:])"
)


@dataclass(frozen=True)
class Place:
    """Where a run's installs run: its first instance, in the run's mode."""

    mode: str  # "hosts" | "processes"
    run_dir: Path
    host: str  # algo-1
    env: dict[str, str]  # the instance's own variables, no AWS_* among them
    keep: tuple[Path, ...] = ()  # this machine's folders the instance needs (the install's target)
    deadline: float | None = None  # time.monotonic() when the run's --timeout ends
    timeout: float | None = None

    @property
    def code(self) -> Path:
        """algo-1's code dir on this machine."""
        return host_dirs(self.run_dir, self.host).code

    def seen(self, path: Path) -> str:
        """``path`` (of this machine) as the install sees it: algo-1's tree is /opt/ml there."""
        root = host_dirs(self.run_dir, self.host).root
        if self.mode == "hosts" and path.is_relative_to(root):
            return str(Path(CONTAINER_ROOT) / path.relative_to(root))
        return str(path)


def place(
    mode: str,
    shape: JobShape,
    run_dir: Path,
    keep: tuple[Path, ...],
    start: float,
    timeout: float | None,
) -> Place:
    """algo-1 of this run, with its container's variables (the toolkit's process's)."""
    host = shape.hosts[0]
    if mode == "hosts":
        base = instance_base(preflight(), 1)
        dirs = HostDirs(Path(CONTAINER_ROOT))
    else:
        base = launch_env(preflight().env(), os.environ)
        dirs = host_dirs(run_dir, host)
    env = {**base, **host_env(shape, dirs, host)}
    env = {k: v for k, v in env.items() if not k.startswith("AWS_")}
    deadline = start + timeout if timeout else None
    return Place(mode, run_dir, host, env, keep, deadline, timeout)


def _start(where: Place, argv: list[str], folder: Path, out: IO[bytes]) -> subprocess.Popen[bytes]:
    if where.mode == "hosts":
        python = Path(argv[0])
        keep = (*where.keep, python.parent, python.resolve().parent, python.parent.parent)
        tree = host_dirs(where.run_dir, where.host).root
        pod = launch.Pod((where.host,), (tree,), folder, keep=keep, own_network=False)
        code = f"{CONTAINER_ROOT}/code"
        return launch.start(
            pod, argv, where.env, code, stdout=out, stderr=subprocess.STDOUT, new_session=True
        )
    own = {}
    for name in ("home", "tmp", "reaper"):
        (folder / name).mkdir(mode=0o700, exist_ok=True)
        own[name] = str(folder / name)
    env = {**where.env, "HOME": own["home"], "TMPDIR": own["tmp"], "TMP": own["tmp"]}
    # under a reaper of the run's kind: it dies with smmpi, and what pip leaves dies with it
    return subprocess.Popen(
        reaper_command(argv, folder / "reaper"),
        env={**env, "TEMP": own["tmp"]},
        cwd=where.code,
        stdin=subprocess.DEVNULL,
        stdout=out,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """Kill the install's session (in isolated hosts its pod: every process of it ends)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError):
        proc.kill()
    proc.wait()


def _wait(proc: subprocess.Popen[bytes], where: Place, what: str) -> int:
    left = None if where.deadline is None else max(0.0, where.deadline - time.monotonic())
    try:
        return proc.wait(timeout=left)
    except subprocess.TimeoutExpired:
        _stop(proc)
        raise TimedOut(
            f"{what} was stopped: the run's --timeout of {where.timeout:g} s (counted from the "
            "run's start) ended while pip was still running (a package index that does not "
            "answer, or a long build?)"
        ) from None
    except BaseException:
        _stop(proc)
        raise


def _tail(out: IO[bytes]) -> str:
    size = out.seek(0, os.SEEK_END)
    out.seek(max(0, size - _TAIL))
    return out.read(_TAIL).decode(errors="replace")


def pip(where: Place, python: str, args: list[str], what: str) -> str:
    """``python -m pip ARGS`` at ``where``, bounded; returns the end of its output.

    A failure is :class:`SmmpiError` naming what failed and why (pip's own line), the run's
    end :class:`TimedOut`.
    """
    folder = where.run_dir / ".smmpi" / "install"
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    argv = [python, "-I", "-S", "-c", _LIMIT, str(MEMORY_CAP), python, "-m", "pip", *args]
    with tempfile.TemporaryFile(dir=folder) as out:
        proc = _start(where, argv, folder, out)
        code = _wait(proc, where, what)
        text = _tail(out)
    if code == 0:
        return text
    if "MemoryError" in text:
        raise SmmpiError(
            f"{what} failed: pip ran out of the {human(MEMORY_CAP)} of memory an install may "
            "use (MemoryError)"
        )
    raise SmmpiError(f"{what} failed: {printable(pip_reason(text))[:_LINE]}")
