"""Every emulated instance's tree, and the lines that start a local run, for every route.

Each instance gets its ``/opt/ml`` tree with the config files SageMaker writes (the request's
``hyperparameters.json``), the job's code (unpacked into ``/opt/ml/code``, or, when exact
mode runs the real toolkit, staged for it to fetch and unpack itself), the checkpoints and
every channel.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from smmpi.archives import extract
from smmpi.instances.machine import start_notes
from smmpi.platform.container_files import restore_checkpoints
from smmpi.platform.inputs import copy_channel
from smmpi.platform.layout import prepare_hosts
from smmpi.runners.base import Progress, RunOptions
from smmpi.runners.local import exact, isolation
from smmpi.runners.local.containers import Container
from smmpi.runners.local.preflight import Checked
from smmpi.toolkit.hosts import HostDirs
from smmpi.toolkit.shape import JobShape


def _each_host(
    request: Mapping[str, Any],
    source: bytes | None,
    region: str | None,
    checkpoints: Path | None,
) -> Callable[[HostDirs], None]:
    """What goes into each host's tree: the unpacked source (None: the toolkit unpacks it
    itself, exact mode), the checkpoints, every channel."""
    channel_specs = {str(c["ChannelName"]): c for c in request.get("InputDataConfig") or []}

    def lay_out(dirs: HostDirs) -> None:
        if source is not None:
            extract(source, dirs.code, links=True)
        restore_checkpoints(request, dirs, checkpoints)
        for channel_name, spec in channel_specs.items():
            target = dirs.channel(channel_name)
            target.mkdir(parents=True, exist_ok=True)
            copy_channel(spec, target, region)

    return lay_out


def lay_out(
    request: Mapping[str, Any],
    source: bytes,
    options: RunOptions,
    shape: JobShape,
    run_dir: Path,
    container: Container,
    checkpoints: Path | None = None,
) -> None:
    """Every host's tree of the job in ``run_dir``, all the hosts at once."""
    hps_json = {k: str(v) for k, v in (request.get("HyperParameters") or {}).items()}
    unpacked: bytes | None = source
    if container.stages_code(shape):  # the toolkit fetches the code
        hps_json, unpacked = exact.stage_code(run_dir, source, hps_json), None
    each = _each_host(request, unpacked, options.region, checkpoints)
    prepare_hosts(shape, run_dir, each, hps_json)


def say_start(
    first: str, shape: JobShape, checked: Checked, container: Container, say: Progress
) -> None:
    """The run's first line, then what differs from SageMaker and what this machine lacks."""
    say(first)
    if checked.mode == "processes":
        say(isolation.differs(checked.why_not_hosts))
    second = container.first_line(shape)
    if second:
        say(second)
    for line in start_notes(shape, os.environ):
        say(line)
