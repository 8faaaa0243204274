"""``smmpi slurm up|down|status``: the test cluster's life, in a folder of its own.

The folder (``$SMMPI_SLURM_DIR``, else ``~/.cache/smmpi/slurm``) holds everything the
cluster uses: slurm.conf, the munge key and socket, the daemons' state, spool and logs,
``bin/`` (SLURM's commands, run on the controller) and ``shared/`` (the filesystem every
node sees, where jobs run). ``up`` clears what an earlier cluster that was killed left
there; ``down`` stops the daemons and removes all but ``shared/`` and ``log/``.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from smmpi.bounded import create
from smmpi.errors import BadInput, SmmpiError
from smmpi.instances.hosts import availability, launch
from smmpi.instances.slurmcluster import layout
from smmpi.instances.slurmcluster.keeper import OWNER, STATE, shape_of
from smmpi.instances.slurmcluster.layout import Shape

MARKER = ".smmpi-slurm"  # in a folder smmpi made for a cluster
KEEPER = "keeper.pid"
READY_SECONDS = 60.0
STOP_SECONDS = 20.0
MAX_NODES, MAX_CPUS = 64, 256
KEPT = ("shared", "log", MARKER)
SLURM_PACKAGES = "slurmctld slurmd slurm-client munge libpmix-dev"


class ClusterError(SmmpiError):
    """The cluster could not start or stop (exit code 1); the line says why."""


@dataclass(frozen=True)
class Status:
    folder: Path
    up: bool
    nodes: int = 0
    cpus: int = 0
    keeper: int | None = None
    sinfo: str = ""


def folder() -> Path:
    explicit = os.environ.get("SMMPI_SLURM_DIR")
    base = explicit or os.path.join(os.path.expanduser("~"), ".cache", "smmpi", "slurm")
    return Path(base).absolute()


def installed() -> dict[str, str]:
    """Where each daemon and command is; a missing one is one line saying how to install it."""
    found: dict[str, str] = {}
    for name in (*layout.DAEMONS, *layout.COMMANDS):
        path = launch.tool(name)
        if path is None:
            raise BadInput(
                "SLURM", f"{name} not found", f"Debian's {SLURM_PACKAGES} (`make slurm`, as root)"
            )
        found[name] = path
    return found


def check_owner() -> None:
    """``SMMPI_SLURM_OWNER``, when set, is a process id (the cluster stops when it ends)."""
    owner = os.environ.get(OWNER)
    if owner is not None and not (owner.isdigit() and int(owner) > 0):
        raise BadInput(OWNER, owner, "a process id: the cluster stops when that process ends")


def check_shape(nodes: int, cpus: int) -> None:
    if not 1 <= nodes <= MAX_NODES:
        raise BadInput("--nodes", nodes, f"an integer from 1 to {MAX_NODES}")
    if not 1 <= cpus <= MAX_CPUS:
        raise BadInput("--cpus", cpus, f"an integer from 1 to {MAX_CPUS}")


def _keeper_pid(where: Path) -> int | None:
    """The keeper's pid, when the one recorded there is alive and is this folder's keeper."""
    try:
        pid = int((where / KEEPER).read_text().strip())
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            words = f.read().split(b"\0")
    except (OSError, ValueError):
        return None
    wanted = [b"smmpi.instances.slurmcluster.keeper", os.fsencode(where)]
    return pid if all(w in words for w in wanted) else None


def status(where: Path | None = None) -> Status:
    where = where or folder()
    pid = _keeper_pid(where)
    if pid is None:
        return Status(where, False)
    shape = shape_of(where)
    answer = _run_command(shape, ["sinfo", "--noheader", "--format=%P %D %c %t %N"])
    return Status(where, True, shape.nodes, shape.cpus, pid, answer.stdout.strip())


def _run_command(shape: Shape, argv: list[str]) -> subprocess.CompletedProcess[str]:
    wrapper = shape.path("bin", argv[0])
    return subprocess.run(
        [wrapper, *argv[1:]], capture_output=True, text=True, timeout=30, check=False
    )


def _clear(where: Path) -> None:
    """Remove what a cluster left in ``where`` (a folder smmpi made), but shared/ and log/."""
    if not where.exists():
        return
    if where.is_symlink() or not where.is_dir():
        raise BadInput("SMMPI_SLURM_DIR", str(where), "a folder (not a link or a file)")
    entries = set(os.listdir(where))
    if entries and MARKER not in entries:
        raise BadInput("SMMPI_SLURM_DIR", str(where), "an empty folder or one smmpi made")
    for name in entries - set(KEPT):
        path = where / name
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink()


def _write(path: Path, text: str | bytes, mode: int = 0o644) -> None:
    with create(path, "cluster file", mode) as f:
        f.write(text.encode() if isinstance(text, str) else text)
    os.chmod(path, mode)


def _lay_out(shape: Shape, tools: dict[str, str]) -> None:
    where = shape.folder
    where.mkdir(mode=0o755, parents=True, exist_ok=True)
    _write(where / MARKER, "")
    for sub in ("munge", "state", "spool", "tmp", "log", "shared", "bin", "ml"):
        (where / sub).mkdir(mode=0o711 if sub == "munge" else 0o755, exist_ok=True)
    for host in shape.hosts:
        (where / "ml" / host).mkdir()
    for k in range(1, shape.nodes + 1):
        (where / "spool" / shape.node(k)).mkdir()
        (where / "tmp" / shape.node(k)).mkdir()
    _write(where / "munge" / "munge.key", os.urandom(1024), 0o400)
    _write(where / "slurm.conf", layout.slurm_conf(shape))
    _write(where / "cluster.sh", layout.start_script(shape, tools), 0o755)
    net = os.readlink("/proc/self/ns/net")
    for name in layout.COMMANDS:
        _write(where / "bin" / name, layout.wrapper(shape, name, tools[name], net), 0o755)
    _write(where / STATE, json.dumps({"nodes": shape.nodes, "cpus": shape.cpus}) + "\n")


def _start_keeper(shape: Shape) -> subprocess.Popen[bytes]:
    """The keeper, in a session of its own: it outlives this command, as daemons do."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW
    log = os.open(shape.path("log", "cluster.log"), flags, 0o644)
    try:
        keeper = subprocess.Popen(
            [sys.executable, "-m", "smmpi.instances.slurmcluster.keeper", str(shape.folder)],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            start_new_session=True,
            env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[3])},
        )
    finally:
        os.close(log)
    _write(shape.folder / KEEPER, f"{keeper.pid}\n")
    return keeper


def _last_log_line(shape: Shape) -> str:
    with contextlib.suppress(OSError):
        lines = Path(shape.path("log", "cluster.log")).read_text(errors="replace").splitlines()
        errors = [line for line in lines if "error" in line.lower() or "smmpi" in line]
        if errors or lines:
            return (errors or lines)[-1].strip()
    return "no log"


def _wait_ready(shape: Shape, keeper: subprocess.Popen[bytes]) -> None:
    """Until every node is idle in ``sinfo``; the keeper's end or the deadline is an error."""
    deadline = time.monotonic() + READY_SECONDS
    while time.monotonic() < deadline:
        if keeper.poll() is not None:
            raise ClusterError(f"the SLURM cluster did not start: {_last_log_line(shape)}")
        answer = _run_command(shape, ["sinfo", "--noheader", "--format=%D %t"])
        idle = sum(
            int(w[0])
            for w in (line.split() for line in answer.stdout.splitlines())
            if len(w) == 2 and w[0].isdigit() and w[1] == "idle"
        )
        if idle == shape.nodes:
            return
        time.sleep(0.1)
    down(shape.folder)
    raise ClusterError(f"the SLURM cluster was not ready in {READY_SECONDS:.0f} s; stopped it")


def up(nodes: int = 3, cpus: int = 2, where: Path | None = None) -> Status:
    """Start the cluster (or find it up with this shape); clear what a killed one left."""
    check_shape(nodes, cpus)
    check_owner()
    tools = installed()
    where = where or folder()
    current = status(where)
    if current.up:
        if (current.nodes, current.cpus) == (nodes, cpus):
            return current
        raise BadInput(
            "--nodes/--cpus",
            f"{nodes}/{cpus}",
            f"the running cluster's {current.nodes}/{current.cpus} (smmpi slurm down first)",
        )
    reason = availability.quick_reason()
    if reason:
        raise ClusterError(f"the SLURM cluster needs isolated hosts: {reason}")
    _clear(where)
    shape = Shape(where, nodes, cpus)
    _lay_out(shape, tools)
    _wait_ready(shape, _start_keeper(shape))
    return status(where)


def down(where: Path | None = None) -> bool:
    """Stop the cluster; False when none was up. Nothing of it is left but shared/ and log/."""
    where = where or folder()
    pid = _keeper_pid(where)
    if pid is not None:
        os.kill(pid, signal.SIGTERM)
        if not _gone(pid, STOP_SECONDS):
            os.kill(pid, signal.SIGKILL)
            _gone(pid, STOP_SECONDS)
    if where.exists() and (where / MARKER).exists():
        _clear(where)
    return pid is not None


def _gone(pid: int, seconds: float) -> bool:
    """Whether ``pid`` ended within ``seconds`` (the keeper is not this process's child)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return True
        except OSError:
            return True
        time.sleep(0.02)
    return False
