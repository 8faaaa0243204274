"""The container a local job's instances run: a value, chosen once from the request and options.

Each answers one question: what each isolated instance runs at its start, with which
variables and folders. There are three:
- :class:`ModelLine`: smmpi's model of the toolkit (the default): the container's mpirun line
  on algo-1, every rank under the rank watcher, reached through the launch agent (or, in
  exact mode without the toolkit, through a real sshd: ``sshd=True``);
- :class:`RealToolkit` (``--exact``): every instance runs the real sagemaker-training
  toolkit's ``train``, with a real sshd;
- :class:`Entrypoint` (ModelTrainer's requests): every instance runs the request's own
  ``ContainerEntrypoint`` and ``ContainerArguments`` (the SDK's driver), with a real sshd.

A new container is one more class with these members; :func:`choose` picks it from the
request's plan (:mod:`smmpi.toolkit.plan`) and the options.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from smmpi.instances.hosts import argv as hosts_argv
from smmpi.instances.hosts import launch
from smmpi.platform.layout import host_dirs, stack_dir
from smmpi.runners.base import Progress, RunOptions
from smmpi.runners.local import exact
from smmpi.runners.local.hostfiles import rank_command, reaper_command, write_host_file
from smmpi.runners.local.isolation import Instances
from smmpi.runners.local.trainer_pod import driver_python, pod_command
from smmpi.toolkit.hosts import CONTAINER_ROOT
from smmpi.toolkit.plan import ContainerPlan
from smmpi.toolkit.shape import JobShape

#: What a run of a request's own start says after its first line.
ENTRYPOINT_LINE = (
    "smmpi: ModelTrainer: every instance runs the request's ContainerEntrypoint and "
    "ContainerArguments (sm_train.sh, then the SDK's MPI driver, unchanged) with a real sshd; "
    "the driver's own waits (ssh bootstrap, status files) add seconds"
)


#: What a run of ``@remote``'s job script says after its first line.
REMOTE_LINE = (
    "smmpi: @remote: every instance runs the request's ContainerEntrypoint and "
    "ContainerArguments (job_driver.sh, the SDK's bootstrap, then mpirun on algo-1, unchanged) "
    "with a real sshd; the job script's own waits (ssh bootstrap, status files) add seconds"
)


class Container(Protocol):
    """What each instance runs at its start, with which variables and folders."""

    @property
    def own_line(self) -> bool:
        """smmpi's own line starts every rank under its watcher: a rank without a record
        never ran (a container's own start may run ranks that are no Python)."""

    @property
    def forwards(self) -> bool:
        """The toolkit's model forwards algo-1's SM_* values to every rank (a note says so)."""

    def first_line(self, shape: JobShape) -> str | None:
        """The line after a run's first that says what runs on every instance; None: none."""

    def stages_code(self, shape: JobShape) -> bool:
        """The container fetches and unpacks the code itself (the real toolkit)."""

    def ready(self, shape: JobShape, progress: Progress) -> None:
        """What it needs built here before it can start, once, after every check."""

    def start(self, made: Instances) -> launch.Command:
        """The pod's command: every instance started as this container starts."""


@dataclass(frozen=True)
class ModelLine:
    """smmpi's model of the toolkit: the container's mpirun line, each rank under its watcher."""

    plan: ContainerPlan  # whose line algo-1 runs
    sshd: bool = False  # exact mode without the toolkit: a real sshd, mpirun through ssh

    @property
    def own_line(self) -> bool:
        return not self.sshd  # (through ssh, a rank may fail to start before its watcher)

    @property
    def forwards(self) -> bool:
        return True

    def first_line(self, shape: JobShape) -> str | None:
        return exact.first_line(shape.image) if self.sshd else None

    def stages_code(self, shape: JobShape) -> bool:
        return False

    def ready(self, shape: JobShape, progress: Progress) -> None:
        return None

    def start(self, made: Instances) -> launch.Command:
        shape, run_dir, python = made.shape, made.run_dir, made.python
        trees = tuple(host_dirs(run_dir, h).root for h in shape.hosts)
        records = stack_dir(run_dir)
        pod = launch.Pod(
            tuple(shape.hosts), trees, run_dir, made.envs, made.keep, records, self.sshd
        )
        pod = dataclasses.replace(pod, warm=made.warm)
        # Each rank starts under the rank watcher, which records how it ended; its host file
        # adds no variable: the instance's environment and mpirun's -x have made the rank's.
        watcher = rank_command(write_host_file(run_dir, "isolated", {}), [python], python)
        agent = None if self.sshd else str(launch.agent_path(pod))  # sshd: ssh, as in the image
        line = dataclasses.replace(self.plan, shape=shape).line  # (a package: once installed)
        argv = hosts_argv.isolated_argv(line, watcher, agent)
        # A process a rank leaves behind is re-parented inside the pod's PID namespace, never
        # to smmpi's reaper outside: a reaper of the same kind, inside, owns mpirun and
        # collects them (no rank count: orted, which has no rank, is collected only when
        # mpirun has ended)
        inside = reaper_command(argv, records, None, None, python)
        # its parent, the pod's first process, is outside algo-1's PID namespace: id 0 there
        inside[inside.index("--parent") + 1] = "0"
        return launch.command(pod, inside, made.envs[0], f"{CONTAINER_ROOT}/code")


@dataclass(frozen=True)
class RealToolkit:
    """``--exact``: the real sagemaker-training toolkit's ``train`` on every instance."""

    sources: tuple[Path, ...]  # the folders the toolkit imports from, first first

    own_line = False
    forwards = True

    def first_line(self, shape: JobShape) -> str | None:
        return exact.first_line(shape.image)

    def stages_code(self, shape: JobShape) -> bool:
        return True

    def ready(self, shape: JobShape, progress: Progress) -> None:
        exact.prepare(shape.image, progress)  # the toolkit's environment, built once

    def start(self, made: Instances) -> launch.Command:
        return exact.toolkit_command(
            made.shape, made.run_dir, made.base, made.envs[0], made.keep, self.sources
        )


@dataclass(frozen=True)
class Entrypoint:
    """A request's own start (ModelTrainer's): its entrypoint on every instance."""

    plan: ContainerPlan  # its entrypoint and the variables of the container's start
    passed: Mapping[str, str]  # the variables the user passed
    line: str = ENTRYPOINT_LINE  # what the run's second line says

    own_line = False
    forwards = False  # (its own start builds its own line: no toolkit forwarding to speak of)

    @functools.cached_property
    def venv_dir(self) -> Path:
        """The interpreter that stands for the image's (built once, by :meth:`ready`)."""
        return driver_python()

    def first_line(self, shape: JobShape) -> str | None:
        return self.line

    def stages_code(self, shape: JobShape) -> bool:
        return False

    def ready(self, shape: JobShape, progress: Progress) -> None:
        self.venv_dir  # noqa: B018  (built here, before the job's folder exists)

    def start(self, made: Instances) -> launch.Command:
        passed = dict(self.passed)
        return pod_command(self.plan, self.venv_dir, passed, made.run_dir, made.base, made.keep)


def choose(planned: ContainerPlan, options: RunOptions) -> Container:
    """The container of a request's plan: its own entrypoint (ModelTrainer's), the model, or
    with ``--exact`` the real toolkit (or, with ``SMMPI_TOOLKIT_VENV=none``, the model's line
    through sshd)."""
    if planned.entrypoint:
        line = REMOTE_LINE if planned.api == "remote" else ENTRYPOINT_LINE
        return Entrypoint(planned, dict(options.env), line)
    if not options.exact:
        return ModelLine(planned)
    sources = exact.toolkit_sources(planned.shape.image)
    return ModelLine(planned, True) if sources is None else RealToolkit(sources)
