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
from smmpi.toolkit.plan import ContainerPlan
from smmpi.toolkit.shape import JobShape


def _each_host(
    request: Mapping[str, Any],
    source: bytes | None,
    region: str | None,
    checkpoints: Path | None,
    channels: Mapping[str, Path],
) -> Callable[[HostDirs], None]:
    """What goes into each host's tree: the unpacked source (None: the container fetches it
    itself), the checkpoints, every channel (``channels``: a folder for a channel whose URI
    is not read here)."""
    channel_specs = {str(c["ChannelName"]): c for c in request.get("InputDataConfig") or []}

    def lay_out(dirs: HostDirs) -> None:
        if source is not None:
            extract(source, dirs.code, links=True)
        restore_checkpoints(request, dirs, checkpoints)
        for channel_name, spec in channel_specs.items():
            target = dirs.channel(channel_name)
            target.mkdir(parents=True, exist_ok=True)
            if channel_name in channels:
                uri = Path(channels[channel_name]).as_uri()
                spec = {"ChannelName": channel_name, "DataSource": {"S3DataSource": {}}}
                spec["DataSource"]["S3DataSource"]["S3Uri"] = uri
            copy_channel(spec, target, region)

    return lay_out


def lay_out(
    planned: ContainerPlan,
    source: bytes,
    options: RunOptions,
    run_dir: Path,
    container: Container,
    checkpoints: Path | None = None,
    channels: Mapping[str, Path] | None = None,
) -> None:
    """Every host's tree of the planned job in ``run_dir``, all the hosts at once."""
    hps_json = dict(planned.hyperparameters)
    unpacked: bytes | None = source
    if container.stages_code(planned.shape):  # the toolkit fetches the code
        hps_json, unpacked = exact.stage_code(run_dir, source, hps_json), None
    elif planned.entrypoint:  # the request's own start fetches it from its channel
        unpacked = None
    each = _each_host(planned.request, unpacked, options.region, checkpoints, channels or {})
    prepare_hosts(planned.shape, run_dir, each, hps_json)


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
