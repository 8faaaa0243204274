"""The one local preflight: every check of a request and of this machine, before any work.

The job's own fields were checked where the request was built (the spec, or
:mod:`smmpi.toolkit.offline` for ``smmpi run``); a request that comes whole (serve,
``run --from-job``) is checked here as the container would take it. Then this machine: the
mode (isolated hosts or processes), ``--exact``'s needs, MPI, the channels, the world's
bounds and, for a throwaway run, the room in the temporary folder. A request that runs its
own start (ModelTrainer's) needs isolated hosts, sshd and paramiko instead
(:func:`check_entrypoint_machine`). Nothing exists before :func:`check` returns; what the
container needs built here (the toolkit's environment, the driver's Python) is built last, once.
"""

from __future__ import annotations

import io
import os
import tarfile
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from smmpi.aws.facts import check_job_name
from smmpi.errors import BadInput
from smmpi.ops.local_jobs import jobs_root
from smmpi.platform.inputs import check_channels
from smmpi.runners.base import RunOptions
from smmpi.runners.local import exact, modes
from smmpi.runners.local.bounds import check_bounds, check_world
from smmpi.runners.local.containers import Container
from smmpi.runners.local.entry import check_request_entry
from smmpi.runners.local.mpi import Launcher, preflight
from smmpi.runners.local.req_files import requirement_lines
from smmpi.runners.local.trainer import check_remote
from smmpi.runners.local.trainer_pod import check_paramiko
from smmpi.spec.shell import check_shell_words
from smmpi.supervision.room import check_room
from smmpi.toolkit.images import framework_of
from smmpi.toolkit.plan import ContainerPlan

#: Where a throwaway run's folder is made (its name is random: sizes count this one's).
THROWAWAY = "smmpi-run-xxxxxxxx"


@dataclass(frozen=True)
class Checked:
    """What the preflight found: the mode, why not isolated hosts, the code's requirements."""

    mode: str  # "hosts" | "processes"
    why_not_hosts: str | None
    wanted: list[str] | None  # requirements.txt's lines (None: none, or the toolkit reads it)
    launcher: Launcher  # this machine's mpirun, found once


def _unpacked_bytes(source: bytes) -> int:
    try:
        with tarfile.open(fileobj=io.BytesIO(source)) as tar:
            return sum(m.size for m in tar.getmembers() if m.isfile())
    except (tarfile.TarError, OSError, EOFError):
        return 0  # the code's own check (extract) says what is wrong with it


def check_machine(options: RunOptions, instances: int, ppn: int) -> Checked:
    """This machine's checks for a job the toolkit runs, made before its request is built
    (``submit --local``: before the SDK): the world's bounds, the mode, MPI. :func:`check`
    takes them (``machine``) and does not make them again."""
    check_world(instances, ppn)
    mode, why_not_hosts = modes.choose(options.isolation, instances)
    return Checked(mode, why_not_hosts, None, preflight())


def check_entrypoint_machine(options: RunOptions, instances: int, ppn: int) -> Checked:
    """This machine's checks for a request's own start (ModelTrainer's): the world's bounds,
    isolated hosts with sshd, paramiko, MPI; BadInput (exit 2) names the first that fails."""
    check_world(instances, ppn)
    asked = options.isolation or os.environ.get("SMMPI_ISOLATION")
    if asked == "processes":
        raise BadInput("isolation", asked, "auto or hosts (a ModelTrainer request runs its sshd)")
    reason = exact.unavailable_reason(instances)
    if reason:
        raise BadInput("--api model-trainer --local", "here", f"exact mode's sshd ({reason})")
    check_paramiko()
    return Checked("hosts", None, None, preflight())


def check(
    planned: ContainerPlan,
    source: bytes,
    options: RunOptions,
    container: Container,
    channels: Mapping[str, Path] | None = None,
    machine: Checked | None = None,
) -> Checked:
    """Every check of a request's plan and of this machine; BadInput (exit 2) names the first
    that fails, before anything is created. ``channels``: folders for channels not read here;
    ``machine``: this machine's checks (:func:`check_machine`, :func:`check_entrypoint_machine`),
    made already."""
    shape = planned.shape
    if not options.throwaway:  # (a throwaway run makes no folder named for its job)
        check_job_name(shape.job_name)
    if planned.entrypoint:
        check_remote(planned, options)
        check_channels(planned.request, channels)  # (a FIFO, a device, /proc/self/environ...)
        checked = machine or check_entrypoint_machine(options, shape.instances, shape.ppn)
    else:
        checked = _check_model(planned, source, options, container, machine)
    container.ready(shape, options.progress)  # built once, after every check
    return checked


def _check_model(
    planned: ContainerPlan,
    source: bytes,
    options: RunOptions,
    container: Container,
    machine: Checked | None,
) -> Checked:
    """The checks of a request the toolkit (its model, or the real one) runs (``machine``:
    this machine's, made already)."""
    shape = planned.shape
    if machine is not None:
        mode, why_not_hosts = machine.mode, machine.why_not_hosts
    else:
        mode, why_not_hosts = modes.choose(options.isolation, shape.instances)
    if options.exact:
        exact.check(options.isolation, shape.instances, shape.image)
    toolkit = container.stages_code(shape)  # the real toolkit installs the code itself
    if not toolkit:  # else the toolkit decides, and its shell fails as on SageMaker
        check_request_entry(shape.script, source)
        hps = {k: str(v) for k, v in shape.hyperparameters.items()}
        check_shell_words(framework_of(shape.image), hps)  # (a request from serve or boto3)
    install = options.install_requirements or toolkit
    wanted = None if options.throwaway else requirement_lines(source, install)
    # a missing MPI is bad input: fail before the job's folder exists
    launcher = machine.launcher if machine is not None else preflight()
    check_channels(planned.request)  # (a FIFO, a device, /proc/self/environ...)
    tmp = Path(tempfile.gettempdir())
    folder = tmp / THROWAWAY if options.throwaway else jobs_root() / shape.job_name / "hosts"
    if machine is None:  # (else checked with the machine's checks)
        check_world(shape.instances, shape.ppn)
    check_bounds(planned, folder)  # nor a world too large to emulate
    if options.throwaway:  # (a local job's folder without room fails as a run, and is recorded)
        check_room(tmp, shape, mode, _unpacked_bytes(source))
    return Checked(mode, why_not_hosts, None if toolkit else wanted, launcher)
