"""The ranks' world against the job's N x n, from the ranks' own records (``rank-R.world``):
a run whose world differs, or whose mpirun exited 0 though not every rank started, fails
with one line (:mod:`smmpi.causes`)."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

from smmpi.causes import say
from smmpi.mpi_output import printable
from smmpi.supervision.exits import Ends
from smmpi.supervision.result import EXIT_FAILED, EXIT_OK, Run, RunResult
from smmpi.toolkit.request import MPI_NUM_PROCESSES
from smmpi.toolkit.shape import JobShape


def _world_rows(record_dir: Path) -> list[dict[str, object]]:
    rows = []
    for path in record_dir.glob("rank-*.world"):
        with contextlib.suppress(OSError, ValueError):
            row = json.loads(path.read_text(encoding="utf-8"))
            if isinstance(row, dict):
                rows.append(row)
    return rows


def world_line(run: Run, completed: bool) -> str | None:
    """The ranks' world against the job's N x n, from the ranks' records: a line when they
    differ (a size other than N x n; or, in a run that completed, an instance without a rank)."""
    rows = _world_rows(run.record_dir)
    sizes = {row.get("size") for row in rows} - {None}
    hosts = {str(row.get("host")) for row in rows}
    shape = run.shape
    missing = [h for h in shape.ranked_hosts if h not in hosts]
    if not rows or (sizes <= {shape.world_size} and not (completed and missing)):
        return None
    started = " or ".join(str(s) for s in sorted(sizes, key=str)) or str(len(rows))
    where = [h for h in shape.hosts if h in hosts] + sorted(hosts - set(shape.hosts))
    on = f"{where[0]} only" if len(where) == 1 else "on " + ", ".join(where)
    if missing:
        on += f"; none on {', '.join(missing)}"
    options = shape.custom_mpi_options
    line = say(
        "world",
        asked=shape.asked,
        started=started,
        on=on,
        why=f": its mpirun options {options!r} change the world" if options else "",
    )
    return printable(line)


def too_many_ranks(shape: JobShape, run_dir: Path) -> RunResult | None:
    """A job whose container line asks for more ranks than its ``--host`` list has slots
    fails before it starts, in every mode, as Open MPI refuses that line in the container."""
    slots = shape.instances * shape.ppn
    if shape.world_size <= slots:
        return None
    result = RunResult(EXIT_FAILED, "Failed", 0.0, run_dir, shape.world_size)
    result.reason = say(
        "too-many-ranks",
        world=shape.world_size,
        field=MPI_NUM_PROCESSES,
        instances=shape.instances,
        ppn=shape.ppn,
        slots=slots,
    )
    return result


def check_world(result: RunResult, run: Run) -> None:
    """End a run whose world is not the job's N x n with one line (exit 1)."""
    if result.exit_code not in (EXIT_OK, EXIT_FAILED):
        return
    line = world_line(run, result.exit_code == EXIT_OK)
    if line is not None:
        result.exit_code, result.status = EXIT_FAILED, "Failed"
        result.failed_rank = result.failed_host = result.phrase = None
        result.reason = line


def check_started(result: RunResult, ends: Ends, run: Run, code: int | None) -> None:
    """End a run whose mpirun exited 0 though not every rank started (exit 1): no rank
    recorded its start or its end, so none of them ran."""
    if result.exit_code != EXIT_OK or code != 0:
        return
    world = run.shape.world_size
    started = len({*ends.pids, *ends.ends} & set(range(world)))
    if started < world:
        which = "no rank" if not started else f"only {started} of the ranks"
        result.exit_code, result.status = EXIT_FAILED, "Failed"
        result.reason = say("no-rank-started", which=which, started=started, world=world)
