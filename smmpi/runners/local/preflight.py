"""The one local preflight: every check of a request and of this machine, before any work.

The job's own fields were checked where the request was built (the spec, or
:mod:`smmpi.toolkit.offline` for ``smmpi run``); a request that comes whole (serve,
``run --from-job``) is checked here as the container would take it. Then this machine: the
mode (isolated hosts or processes), ``--exact``'s needs, MPI, the channels, the world's
bounds and, for a throwaway run, the room in the temporary folder. Nothing exists before
:func:`check` returns; the toolkit's environment (``--exact``) is built last, once.
"""

from __future__ import annotations

import io
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from smmpi.aws.facts import check_job_name
from smmpi.ops.local_jobs import jobs_root
from smmpi.platform.inputs import check_channels
from smmpi.runners.base import RunOptions
from smmpi.runners.local import exact, modes
from smmpi.runners.local.bounds import check_bounds
from smmpi.runners.local.containers import Container
from smmpi.runners.local.entry import check_request_entry
from smmpi.runners.local.mpi import Launcher, preflight
from smmpi.runners.local.req_files import requirement_lines
from smmpi.spec.shell import check_shell_words
from smmpi.supervision.room import check_room
from smmpi.toolkit.images import framework_of
from smmpi.toolkit.request import user_hyperparameters
from smmpi.toolkit.shape import JobShape

if TYPE_CHECKING:
    from smmpi.aws.types import Request

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


def check(
    request: Request, source: bytes, options: RunOptions, shape: JobShape, container: Container
) -> Checked:
    """Every check of ``request`` (a job of ``shape``) and of this machine; BadInput (exit 2)
    names the first that fails, before anything is created."""
    if not options.throwaway:  # (a throwaway run makes no folder named for its job)
        check_job_name(shape.job_name)
    mode, why_not_hosts = modes.choose(options.isolation, shape.instances)
    if options.exact:
        exact.check(options.isolation, shape.instances, shape.image)
    toolkit = container.stages_code(shape)  # the real toolkit installs the code itself
    if not toolkit:  # else the toolkit decides, and its shell fails as on SageMaker
        check_request_entry(shape.script, source)
        hps = {k: str(v) for k, v in user_hyperparameters(request).items()}
        check_shell_words(framework_of(shape.image), hps)  # (a request from serve or boto3)
    install = options.install_requirements or toolkit
    wanted = None if options.throwaway else requirement_lines(source, install)
    launcher = preflight()  # a missing MPI is bad input: fail before the job's folder exists
    check_channels(request)  # (a FIFO, a device, /proc/self/environ...)
    tmp = Path(tempfile.gettempdir())
    folder = tmp / THROWAWAY if options.throwaway else jobs_root() / shape.job_name / "hosts"
    check_bounds(shape, folder)  # nor a world too large to emulate
    if options.throwaway:  # (a local job's folder without room fails as a run, and is recorded)
        check_room(tmp, shape, mode, _unpacked_bytes(source))
    if options.exact:
        exact.prepare(shape.image, options.progress)  # the toolkit's environment, built once
    return Checked(mode, why_not_hosts, None if toolkit else wanted, launcher)
