"""A local job's record: its describe-like ``describe.json``, and what a finished one holds."""

from __future__ import annotations

import contextlib
import json
import signal
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from smmpi.archives import tar_dirs
from smmpi.errors import BadInput, SmmpiError
from smmpi.ops.local_jobs import discard_unfinished, jobs_root, made_here
from smmpi.ops.private_files import write_private
from smmpi.platform.container_files import checkpoint_uri, sync_checkpoints, tar_output_data
from smmpi.runners.local.supervise import EXIT_FAILED, EXIT_OK, RunResult
from smmpi.toolkit.hosts import HostDirs
from smmpi.trees import TreeRefused

STATUS_OF = {
    "Completed": "Completed",
    "Failed": "Failed",
    "TimedOut": "Failed",
    "Interrupted": "Stopped",
}


class Interrupted(SmmpiError):
    """Ctrl-C or SIGTERM outside the ranks' run (exit code 130); the message says what of the
    job is left."""

    exit_code = 130


def interrupted(name: str | None) -> Interrupted:
    """What an interrupt outside the ranks' run leaves of local job ``name`` (None: not named
    yet): nothing, if the job never ran (a folder of it this process made is removed), else its
    record of how it ended."""
    if name is None or not made_here(name) or discard_unfinished(name):
        return Interrupted("interrupted before the job's ranks started; nothing of it was kept")
    try:
        status = load_record(name).get("TrainingJobStatus", "?")
    except (OSError, ValueError, BadInput):
        status = "?"
    return Interrupted(f"interrupted; local job {name} had ended: {status} ({jobs_root() / name})")


class Stops:
    """SIGINT and SIGTERM while a local job is made and run: ``KeyboardInterrupt`` (as Ctrl-C
    is), and remembered, since the SDK's telemetry wrapper swallows any exception a ``return`` in
    its ``finally`` meets (``KeyboardInterrupt`` included: ``fit`` then returns None)."""

    def __init__(self) -> None:
        self.came = False
        self.name: str | None = None  # the job's, once known

    def __call__(self, signum: int, frame: object) -> None:
        self.came = True
        raise KeyboardInterrupt

    def check(self, interrupted: bool = False) -> None:
        """Go on with the interrupt the SDK swallowed, if one came."""
        if self.came or interrupted:
            raise KeyboardInterrupt


@contextlib.contextmanager
def interruptible() -> Iterator[Stops]:
    """SIGTERM ends a local job (``submit --local``, ``run --from-job``) as Ctrl-C does. While
    the ranks run, either stops them and the job is recorded Stopped (exit 130); at any other
    time it ends the command with :class:`Interrupted` (exit 130, one line), and a job that
    never ran leaves nothing."""
    stops = Stops()
    signals = (signal.SIGINT, signal.SIGTERM)
    previous = {signum: signal.getsignal(signum) for signum in signals}
    ours = threading.current_thread() is threading.main_thread() and None not in previous.values()
    for signum in signals if ours else ():
        signal.signal(signum, stops)
    try:
        yield stops
    except BaseException as err:  # (what the SDK raised after swallowing one, too)
        if isinstance(err, KeyboardInterrupt) or (stops.came and isinstance(err, Exception)):
            raise interrupted(stops.name) from None
        raise
    finally:
        for signum, handler in previous.items() if ours else ():
            signal.signal(signum, handler)


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


@dataclass
class LocalJob:
    """A finished local job: its describe-like record and where its artifacts are."""

    name: str
    folder: Path
    record: dict[str, Any]
    result: RunResult

    @property
    def status(self) -> str:
        return str(self.record["TrainingJobStatus"])

    @property
    def exit_code(self) -> int:
        return self.result.exit_code

    @property
    def model_artifact(self) -> Path:
        return self.folder / "model.tar.gz"

    @property
    def output_artifact(self) -> Path:
        return self.folder / "output.tar.gz"


def load_record(name: str) -> dict[str, Any]:
    path = jobs_root() / name / "describe.json"
    if not path.is_file():
        raise BadInput("JOB", name, f"a local job under {jobs_root()}")
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def write_record(folder: Path, record: dict[str, Any]) -> None:
    write_private(folder / "describe.json", json.dumps(record, indent=2, default=str) + "\n")


def new_record(request: Mapping[str, Any], name: str, run_dir: Path) -> dict[str, Any]:
    return {
        "TrainingJobName": name,
        "TrainingJobArn": f"local:training-job/{name}",
        "TrainingJobStatus": "InProgress",
        "SecondaryStatus": "Starting",
        "CreationTime": now(),
        "HyperParameters": request.get("HyperParameters", {}),
        "AlgorithmSpecification": request.get("AlgorithmSpecification", {}),
        "ResourceConfig": request.get("ResourceConfig", {}),
        "InputDataConfig": request.get("InputDataConfig", []),
        "Environment": request.get("Environment", {}),
        **({"CheckpointConfig": request["CheckpointConfig"]} if checkpoint_uri(request) else {}),
        "LocalHostsDir": str(run_dir),
    }


def finish(
    record: dict[str, Any],
    request: Mapping[str, Any],
    hosts: Sequence[HostDirs],
    folder: Path,
    failure: str | None,
    result: RunResult,
) -> None:
    """What SageMaker does when a job's instances have ended: sync the checkpoints, pack
    ``model.tar.gz`` (a completed job: ``failure`` None) and ``output.tar.gz``, and record it.

    A folder that cannot leave its instance (a link out of it: :mod:`smmpi.trees`) fails
    the job: its line is the FailureReason (and ``result``'s, if the ranks succeeded), and
    its archive is not written.
    """
    refused: list[str] = []
    run_dir = folder / "hosts"
    with _refusals(refused):
        sync_checkpoints(request, hosts, folder)
    with _refusals(refused):
        tar_output_data(hosts, folder / "output.tar.gz", run_dir)
        record["OutputArtifacts"] = (folder / "output.tar.gz").as_uri()
    if failure is None and not refused:
        with _refusals(refused):
            tar_dirs([d.model for d in hosts], folder / "model.tar.gz", below=run_dir)
            record["ModelArtifacts"] = {"S3ModelArtifacts": (folder / "model.tar.gz").as_uri()}
    line = refused[0] if refused else None
    if line is not None:
        record.update(TrainingJobStatus="Failed", SecondaryStatus="Failed")
        failure = f"{failure}\n{line}" if failure else line
        if result.exit_code == EXIT_OK:
            result.exit_code, result.status, result.reason = EXIT_FAILED, "Failed", line
    if failure is not None:
        record["FailureReason"] = failure
    write_record(folder, record)


@contextlib.contextmanager
def _refusals(lines: list[str]) -> Iterator[None]:
    try:
        yield
    except TreeRefused as err:
        lines.append(str(err))
