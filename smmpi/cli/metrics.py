"""``smmpi metrics JOB [--plot FILE.png]``: a job's training metrics, point by point.

A local job (``submit --local``) is read from its folder; any other job from
CloudWatch (GetMetricData through the configured endpoint: SageMaker, or
``smmpi serve``). Only click is imported at module level.
"""

from __future__ import annotations

import json
import os
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import click

from smmpi.cli.options import region_option
from smmpi.errors import BadInput

Series = dict[str, list[tuple[float, float]]]
INSTALL = "pip install 'smmpi[plot]' (or pip install matplotlib)"


@click.command("metrics")
@click.argument("job")
@click.option(
    "--plot",
    default=None,
    metavar="FILE.png",
    help="Also draw each metric over time into FILE.png, a new file (never overwritten).",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@region_option
def metrics_cmd(job: str, plot: str | None, as_json: bool, region: str | None) -> None:
    """Print a job's training metrics (its MetricDefinitions' points), oldest first.

    A local job of that name (submit --local) is read from its folder; any other
    from CloudWatch, as SageMaker keeps them (AWS_ENDPOINT_URL: smmpi serve).
    """
    from smmpi.aws.facts import check_job_name

    check_job_name(job)
    if plot is not None:
        check_plot(plot)
    series, where = job_series(job, region)
    if as_json:
        click.echo(json.dumps(_as_json(job, where, series)))
    elif series:
        for line in table(series):
            click.echo(line)
    if not series:
        click.echo(f"smmpi: no metrics for {where} {job} (no MetricDefinitions matched)", err=True)
    if plot is not None and series:
        write_new(plot, render_png(series, f"{where} {job}"))
        click.echo(f"smmpi: plot written to {plot}", err=True)


def job_series(job: str, region: str | None) -> tuple[Series, str]:
    """A job's series and what it is: a local job of that name (from its folder), else a
    submitted one (from CloudWatch)."""
    from smmpi.platform.run_metrics import local_series

    series = local_series(job)
    if series is not None:
        return series, "local job"
    return remote_series(job, region), "job"


def remote_series(job: str, region: str | None) -> Series:
    """A submitted job's series, from CloudWatch through the configured endpoint."""
    from smmpi.aws.clients import clients
    from smmpi.ops.metrics import job_series

    sm, cloudwatch = clients("sagemaker", "cloudwatch", region=region)
    return job_series(sm, cloudwatch, job, region)


def _iso(when: float) -> str:
    return datetime.fromtimestamp(when, timezone.utc).isoformat(timespec="milliseconds")


def _as_json(job: str, where: str, series: Series) -> dict[str, Any]:
    return {"job": job, "local": where == "local job", "metrics": as_points(series)}


def as_points(series: Series) -> dict[str, list[dict[str, Any]]]:
    """Each metric's points as ``{"timestamp": ISO, "value": V}``."""
    return {
        m: [{"timestamp": _iso(t), "value": v} for t, v in points] for m, points in series.items()
    }


def table(series: Series) -> list[str]:
    """``METRIC  TIME  VALUE`` rows, each metric's points in time order."""
    width = max(len("METRIC"), *(len(m) for m in series))
    rows = [f"{'METRIC':<{width}}  {'TIME':<29}  VALUE"]
    for metric, points in series.items():
        rows += [f"{metric:<{width}}  {_iso(t):<29}  {v:g}" for t, v in points]
    return rows


def check_plot(path: str) -> None:
    """``--plot``'s file: a .png name that does not exist yet, in an existing folder, and
    matplotlib to draw it; else one line (exit 2) before anything is asked or written."""
    from smmpi.bounded import lookup
    from smmpi.errors import MissingPackage

    if not path.lower().endswith(".png"):
        raise BadInput("--plot", path, "a file name ending in .png")
    if os.path.lexists(path) or lookup("--plot", path):
        raise BadInput("--plot", path, "a file that does not exist yet (smmpi never overwrites)")
    if not Path(path).absolute().parent.is_dir():
        raise BadInput("--plot", path, "a new file in an existing folder")
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise MissingPackage(
            f"--plot needs matplotlib, which is not installed: {INSTALL}"
        ) from None


def render_png(series: Series, title: str) -> bytes:
    """Each metric over time, one panel each (seconds since the first point), as PNG bytes."""
    import io

    from matplotlib.figure import Figure

    figure = Figure(figsize=(7, 1.2 + 2.0 * len(series)), layout="constrained")
    axes = figure.subplots(len(series), 1, squeeze=False)[:, 0]
    first = min(points[0][0] for points in series.values())
    for ax, (metric, points) in zip(axes, series.items(), strict=True):
        ax.plot([t - first for t, _ in points], [v for _, v in points], marker=".")
        ax.set_ylabel(metric)
        ax.grid(True, alpha=0.3)
    axes[-1].set_xlabel("seconds since the first point")
    figure.suptitle(title)
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    return buffer.getvalue()


def write_new(path: str, data: bytes) -> None:
    """Write ``data`` to ``path`` as a new file: never through a link, never over a file."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(path, flags, 0o644)
    except FileExistsError:
        raise BadInput(
            "--plot", path, "a file that does not exist yet (smmpi never overwrites)"
        ) from None
    except OSError as err:
        raise BadInput("--plot", path, f"a file smmpi can create ({err.strerror})") from None
    with os.fdopen(fd, "wb") as f:
        f.write(data)
