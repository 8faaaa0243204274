"""Local mode: run a CreateTrainingJob request here, the way SageMaker's container would.

This module plays SageMaker's part for one request. It reads what the
container toolkit reads, and nothing from the spec:
- ``HyperParameters``: ``sagemaker_program``, ``sagemaker_submit_directory``,
  ``sagemaker_mpi_*``; the rest become script arguments and ``SM_HP_*``;
- ``ResourceConfig.InstanceCount`` and ``InstanceType``;
- ``InputDataConfig``: ``file://`` and ``s3://`` channels, copied into every
  host's ``input/data/<channel>``;
- ``Environment``.

It then runs the job as N emulated hosts with :mod:`smmpi.local.launcher`.
On completion it writes ``model.tar.gz`` and ``output.tar.gz`` as SageMaker
does; on failure it writes ``output/failure``. Either way it leaves a
describe-like record (``describe.json``) in the job's folder.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import sys
import tarfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, Any
from urllib.parse import urlparse

from smmpi import jobs, plan
from smmpi.errors import BadInput, SmmpiError
from smmpi.local.launcher import EXIT_OK, RunResult, execute, prepare_hosts
from smmpi.local.layout import HostDirs, JobShape
from smmpi.local.mpi import preflight

STATUS_OF = {
    "Completed": "Completed",
    "Failed": "Failed",
    "TimedOut": "Failed",
    "Interrupted": "Stopped",
}


def jobs_root() -> Path:
    """Where local jobs live: ``$SMMPI_LOCAL_JOBS``, else ``~/.smmpi/local-jobs``."""
    explicit = os.environ.get("SMMPI_LOCAL_JOBS")
    return Path(explicit).expanduser() if explicit else Path.home() / ".smmpi" / "local-jobs"


def _now() -> str:
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


def _shape(request: dict[str, Any]) -> JobShape:
    """The job as the toolkit sees it, from the request alone."""
    try:
        script = plan.program(request)
        instances = int(request["ResourceConfig"]["InstanceCount"])
    except (KeyError, TypeError, ValueError) as err:
        raise BadInput(
            "request",
            f"missing {err}",
            "a CreateTrainingJob request with sagemaker_program and ResourceConfig.InstanceCount",
        ) from None
    fw = plan.framework_params(request)
    if fw.get("sagemaker_mpi_enabled") not in (True, "true", "True"):
        raise BadInput(
            "HyperParameters.sagemaker_mpi_enabled",
            fw.get("sagemaker_mpi_enabled"),
            "true (smmpi runs MPI jobs)",
        )
    instance_type = str(request["ResourceConfig"].get("InstanceType", "local"))
    from smmpi.spec import vcpus

    channels = {
        str(c["ChannelName"]): str(c.get("ContentType") or "")
        for c in request.get("InputDataConfig") or []
    }
    return JobShape(
        job_name=str(request.get("TrainingJobName", "local-job")),
        script=script,
        instances=instances,
        ppn=plan.processes_per_host(request),
        hyperparameters=plan.user_hyperparameters(request),
        user_args=plan.program_args(request),
        custom_mpi_options=str(fw.get(plan.MPI_CUSTOM_OPTIONS) or ""),
        channels=channels,
        environment={str(k): str(v) for k, v in (request.get("Environment") or {}).items()},
        instance_type=instance_type,
        num_cpus=vcpus(instance_type) or 0,
        module_dir=str(plan.decode_hyperparameters(request).get("sagemaker_submit_directory", "")),
    )


def fetch_source(request: dict[str, Any], s3: Any = None, region: str | None = None) -> bytes:
    """The ``sourcedir.tar.gz`` named by ``sagemaker_submit_directory`` (s3:// or file://)."""
    uri = str(plan.decode_hyperparameters(request).get("sagemaker_submit_directory", ""))
    if uri.startswith("s3://"):
        bucket, key = jobs.split_s3(uri)
        with jobs.aws_errors():
            body = (s3 or jobs.clients("s3", region=region)[0]).get_object(Bucket=bucket, Key=key)
            body = body["Body"]
            data: bytes = body.read()
        return data
    if uri.startswith("file://"):
        return Path(urlparse(uri).path).read_bytes()
    raise BadInput("sagemaker_submit_directory", uri, "an s3:// or file:// sourcedir.tar.gz")


def _extract(archive: bytes, dest: Path) -> None:
    with tarfile.open(fileobj=io.BytesIO(archive), mode="r:*") as tar:
        tar.extractall(dest, filter="data")


def _copy_channel(channel: dict[str, Any], dest: Path, region: str | None) -> None:
    source = channel.get("DataSource", {})
    uri = source.get("S3DataSource", {}).get("S3Uri", "")
    if "FileDataSource" in source or uri.startswith("file://"):
        src = Path(urlparse(uri or source["FileDataSource"]["FileUri"]).path)
        if not src.exists():
            raise BadInput(
                f"InputDataConfig.{channel.get('ChannelName')}",
                uri or str(src),
                "an existing local file or folder",
            )
        if src.is_dir():
            shutil.copytree(src, dest, dirs_exist_ok=True)
        else:
            shutil.copy2(src, dest / src.name)
        return
    if not uri.startswith("s3://"):
        raise BadInput(
            f"InputDataConfig.{channel.get('ChannelName')}", uri, "an s3:// or file:// data source"
        )
    bucket, prefix = jobs.split_s3(uri)
    (s3,) = jobs.clients("s3", region=region)
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        for obj in page.get("Contents", []):
            rel = obj["Key"][len(prefix) :].lstrip("/") or Path(obj["Key"]).name
            target = dest / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            s3.download_file(bucket, obj["Key"], str(target))


def _tar_dirs(sources: list[Path], archive: Path) -> None:
    """One archive of several hosts' dirs merged, as the SDK's local mode does."""
    with tarfile.open(archive, "w:gz") as tar:
        for src in sources:
            for path in sorted(src.rglob("*")):
                if path.is_file():
                    tar.add(path, arcname=path.relative_to(src).as_posix())


def run_request(
    request: dict[str, Any],
    source: bytes,
    *,
    timeout: float | None = None,
    log_dir: str | Path | None = None,
    keep: bool = True,
    region: str | None = None,
    out: IO[str] | None = None,
    err: IO[str] | None = None,
    on_start: Callable[[dict[str, Any]], None] | None = None,
    install_requirements: bool = False,
) -> LocalJob:
    """Run ``request`` here with ``source`` (the job's sourcedir.tar.gz) as its code."""
    err = err or sys.stderr
    shape = _shape(request)
    name = shape.job_name
    jobs.check_name(name)
    preflight()  # a missing MPI is bad input: fail before the job's folder exists
    folder = jobs_root() / name
    if folder.exists():
        shutil.rmtree(folder)
    run_dir = folder / "hosts"
    run_dir.mkdir(parents=True)
    hps_json = {k: str(v) for k, v in (request.get("HyperParameters") or {}).items()}
    channel_specs = {str(c["ChannelName"]): c for c in request.get("InputDataConfig") or []}

    def lay_out(dirs: HostDirs) -> None:
        _extract(source, dirs.code)
        for channel_name, spec in channel_specs.items():
            target = dirs.channel(channel_name)
            target.mkdir(parents=True, exist_ok=True)
            _copy_channel(spec, target, region)

    record: dict[str, Any] = {
        "TrainingJobName": name,
        "TrainingJobArn": f"local:training-job/{name}",
        "TrainingJobStatus": "InProgress",
        "SecondaryStatus": "Starting",
        "CreationTime": _now(),
        "HyperParameters": request.get("HyperParameters", {}),
        "AlgorithmSpecification": request.get("AlgorithmSpecification", {}),
        "ResourceConfig": request.get("ResourceConfig", {}),
        "InputDataConfig": request.get("InputDataConfig", []),
        "Environment": request.get("Environment", {}),
        "LocalHostsDir": str(run_dir),
    }
    _write_record(folder, record)
    if on_start:
        on_start(record)
    start = time.monotonic()
    prepare_hosts(shape, run_dir, lay_out, hps_json)
    extra_paths = _requirements(
        run_dir / shape.hosts[0] / "opt" / "ml" / "code", folder, install_requirements, err
    )
    record.update(SecondaryStatus="Training", TrainingStartTime=_now())
    _write_record(folder, record)
    err.write(
        f"smmpi: local job {name}: {shape.instances} emulated host(s) x {shape.ppn} "
        f"process(es) = {shape.world_size} ranks ({shape.instance_type})\n"
    )
    err.flush()
    result = execute(
        shape,
        run_dir,
        timeout=timeout,
        log_dir=Path(log_dir) if log_dir else folder / "logs",
        out=out,
        err=err,
        extra_paths=extra_paths,
    )
    hosts = [HostDirs(run_dir / h / "opt" / "ml") for h in shape.hosts]
    status = STATUS_OF[result.status]
    record.update(
        TrainingJobStatus=status,
        SecondaryStatus=status,
        TrainingEndTime=_now(),
        TrainingTimeInSeconds=round(time.monotonic() - start, 3),
        BillableTimeInSeconds=0,
    )
    if result.exit_code != EXIT_OK:
        reason = result.failure_line or result.status
        record["FailureReason"] = reason
        for dirs in hosts:
            if not dirs.failure.exists():  # the toolkit never overwrites a program's own
                dirs.failure.write_text(reason + "\n", encoding="utf-8")
    else:
        _tar_dirs([d.model for d in hosts], folder / "model.tar.gz")
        record["ModelArtifacts"] = {"S3ModelArtifacts": (folder / "model.tar.gz").as_uri()}
    _tar_dirs([d.output for d in hosts], folder / "output.tar.gz")
    record["OutputArtifacts"] = (folder / "output.tar.gz").as_uri()
    _write_record(folder, record)
    if not keep:
        shutil.rmtree(run_dir, ignore_errors=True)
    if status == "Completed":
        err.write(
            f"smmpi: local job {name} Completed in {result.seconds:.1f} s\n"
            f"smmpi: model  {folder / 'model.tar.gz'}\n"
            f"smmpi: output {folder / 'output.tar.gz'}\n"
        )
    else:
        err.write(
            f"smmpi: local job {name} {status}: output/failure written under {run_dir}\n"
            f"smmpi: {record['FailureReason']}\n"
        )
    err.flush()
    return LocalJob(name, folder, record, result)


def _requirements(code: Path, folder: Path, install: bool, err: IO[str]) -> list[str]:
    """Say what the container would pip install; install it in the job's own folder if asked.

    SageMaker's container runs ``pip install -r requirements.txt`` from the
    code dir before the program starts. Here that would change this machine's
    environment, so it happens only on request, into ``<job>/site-packages``,
    which goes first on every rank's PYTHONPATH.
    """
    req = code / "requirements.txt"
    if not req.is_file():
        return []
    wanted = [
        ln.strip()
        for ln in req.read_text(encoding="utf-8").splitlines()
        if ln.strip() and not ln.lstrip().startswith("#")
    ]
    if not install:
        err.write(
            f"smmpi: requirements.txt asks for {', '.join(wanted) or 'nothing'}: SageMaker's "
            "container pip-installs it; not installed here (use --install-requirements to "
            "install it into this job's own folder)\n"
        )
        return []
    target = folder / "site-packages"
    err.write(f"smmpi: installing requirements.txt ({', '.join(wanted)}) into {target}\n")
    err.flush()
    import subprocess

    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--target",
            str(target),
            "-r",
            str(req),
        ],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        tail = (done.stderr.strip().splitlines() or ["pip failed"])[-1]
        raise SmmpiError(f"installing requirements.txt failed: {tail}")
    return [str(target)]


def _write_record(folder: Path, record: dict[str, Any]) -> None:
    tmp = folder / "describe.json.tmp"
    tmp.write_text(json.dumps(record, indent=2, default=str) + "\n", encoding="utf-8")
    tmp.replace(folder / "describe.json")


def describe_remote(job_name: str, region: str | None = None) -> tuple[dict[str, Any], Any]:
    """DescribeTrainingJob, and an S3 client, through clients that honour ``AWS_ENDPOINT_URL``."""
    jobs.check_name(job_name)
    sm, s3 = jobs.clients("sagemaker", "s3", region=region)
    return jobs.describe(sm, job_name, region), s3


def request_from_description(desc: dict[str, Any], new_name: str | None = None) -> dict[str, Any]:
    """The parts of a DescribeTrainingJob answer that were its CreateTrainingJob request."""
    keys = (
        "AlgorithmSpecification",
        "HyperParameters",
        "ResourceConfig",
        "InputDataConfig",
        "OutputDataConfig",
        "Environment",
        "StoppingCondition",
        "RoleArn",
    )
    request = {k: desc[k] for k in keys if k in desc}
    request["TrainingJobName"] = new_name or desc["TrainingJobName"]
    return request
