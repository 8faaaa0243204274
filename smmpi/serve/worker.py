"""One job run by the local runner, in a process of its own, forked for it by :mod:`.forkserver`.

serve runs one worker per job, so a job is stopped the way a terminal
stops ``submit --local``: SIGTERM becomes Ctrl-C in this process's main
thread, and the local runner ends every rank. The worker dies with its fork server
(``PR_SET_PDEATHSIG``), which ends with serve, and its run's reaper dies with it. The ranks' output
goes to stdout (the job's log), smmpi's progress lines to stderr; how the run
ended is written as JSON to the spec's ``result`` path.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

WORKER_ENV = "SMMPI_SERVE_JOB_ENV"  # JSON: the variables every instance of the job gets
WORKER_RELAY = "SMMPI_SERVE_RELAY"  # the relay's path in the job's work folder


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def _restore(spec: dict[str, Any]) -> Callable[[dict[str, Any]], None] | None:
    """Lay what serve downloaded for each host into its tree before the runner fills it:
    CheckpointConfig's files into every host's /opt/ml/checkpoints, and each host's share
    of a ShardedByS3Key channel (``shards/algo-k/CHANNEL``) into its input/data."""
    saved, shards = spec.get("checkpoints"), spec.get("shards")
    if not saved and not shards:
        return None

    def restore(record: dict[str, Any]) -> None:
        from smmpi.toolkit.request import hosts

        for host in hosts(spec["request"]):
            opt_ml = Path(record["LocalHostsDir"]) / host / "opt" / "ml"
            if saved:
                shutil.copytree(saved, opt_ml / "checkpoints", symlinks=True, dirs_exist_ok=True)
            share = Path(shards or "") / host
            if shards and share.is_dir():
                shutil.copytree(share, opt_ml / "input" / "data", dirs_exist_ok=True)

    return restore


def _endpoint(spec: dict[str, Any], access: dict[str, str]) -> Callable[[dict[str, Any]], None]:
    """An ``@remote`` job: every instance starts by handing serve its S3 endpoint
    (:mod:`smmpi.platform.instance_endpoint`), through the relay serve made, which moves
    into the run folder (the instances see it) as the run starts."""
    from smmpi.ops.local_jobs import jobs_root

    request = spec["request"]
    inside = jobs_root() / request["TrainingJobName"] / "hosts" / ".smmpi" / "endpoint.sock"
    algo = request["AlgorithmSpecification"]
    algo["ContainerEntrypoint"] = [
        sys.executable, "-I", "-m", "smmpi.platform.instance_endpoint", str(inside), "--",
        *algo["ContainerEntrypoint"],
    ]  # fmt: skip
    restore = _restore(spec)

    def start(record: dict[str, Any]) -> None:
        target = Path(record["LocalHostsDir"]) / ".smmpi" / "endpoint.sock"
        target.parent.mkdir(mode=0o700, exist_ok=True)
        os.rename(access[WORKER_RELAY], target)
        if restore is not None:
            restore(record)

    return start


def _saying_whose(given: dict[str, str]) -> Callable[[str], None]:
    """Progress to stderr, where the run's line on the ranks' AWS variables says whose they
    are: the job's own key from serve, not this shell's."""
    from smmpi.platform.layout import credentials_note
    from smmpi.runners.base import writer

    say, shell = writer(sys.stderr), credentials_note(given)

    def progress(line: str) -> None:
        if line == shell:
            line = (
                "smmpi: the ranks get the job's own key, which reaches S3 under the job's "
                f"folder only, while it runs, at {given['AWS_ENDPOINT_URL_S3']} on each "
                "instance's own loopback (on SageMaker: the execution role's credentials)"
            )
        say(line)

    return progress


def run(spec: dict[str, Any], access: dict[str, str] | None = None) -> dict[str, Any]:
    from smmpi.api import options
    from smmpi.errors import SmmpiError
    from smmpi.ops.drivers import LOCAL_WORLD
    from smmpi.runners.base import writer
    from smmpi.runners.local.job import run as run_local
    from smmpi.runners.local.trainer import is_trainer_request

    source = Path(spec["source"]).read_bytes()
    chosen = options(
        progress=writer(sys.stderr),
        out=sys.stdout,
        err=sys.stdout,
        isolation=spec.get("isolation"),
        exact=bool(spec.get("exact")),
        keep=True,
        metrics=(),  # serve applies the job's MetricDefinitions to its log itself
    )
    try:
        # ModelTrainer's: the container's own start, the driver's -np as SageMaker runs it
        chosen = dataclasses.replace(chosen, as_sagemaker=is_trainer_request(spec["request"]))
        on_start = _restore(spec)
        if access:  # an @remote job: its instances' S3 endpoint, key and region
            on_start = _endpoint(spec, access)
            given = json.loads(access[WORKER_ENV])
            chosen = dataclasses.replace(
                chosen, env={**chosen.env, **given}, progress=_saying_whose(given)
            )
        job = run_local(spec["request"], source, chosen, on_start=on_start)
    except KeyboardInterrupt:
        return {"status": "Stopped", "exit_code": 130, "line": "stopped before the ranks started"}
    except SmmpiError as err:
        return {"status": "Failed", "exit_code": 2, "line": str(err), "error": True}
    result = job.result
    short = job.record.get(LOCAL_WORLD)
    if short:  # said in the job's log (algo-1's stream), as SageMaker's job would not
        print(f"smmpi: {short}", flush=True)
    return {
        "status": job.status,
        "exit_code": job.exit_code,
        "line": result.failure_line,
        "reason": result.reason,
        "run_status": result.status,
        "folder": str(job.folder),
        "short_world": short,
    }


def main(spec_path: str) -> None:
    """Run the job of ``spec_path`` (in a process forked for it by :mod:`.forkserver`)."""
    signal.signal(signal.SIGTERM, _interrupt)
    # what serve gave an @remote job, out of this environment before anything reads it
    access = {
        name: os.environ.pop(name) for name in (WORKER_ENV, WORKER_RELAY) if name in os.environ
    }
    spec = json.loads(Path(spec_path).read_text(encoding="utf-8"))
    answer = run(spec, access if len(access) == 2 else None)
    Path(spec["result"]).write_text(json.dumps(answer), encoding="utf-8")
