"""The CreateTrainingJob request the SDK's ``ModelTrainer`` builds, captured offline.

Standalone (the standard library, boto3 and the SDK only), so it serves both SDKs:
- smmpi imports it, with SDK v2's ``sagemaker.modules.train`` (same venv);
- SDK v3 (``sagemaker.train``) owns the ``sagemaker`` package too, so it lives in a venv of
  its own; there this file runs as a script, the trainer's spec as JSON on stdin, the
  request and where each channel's copy is as JSON on stdout.

Nothing leaves the process: the boto3 session refuses every HTTP request, CreateTrainingJob
and the DescribeTrainingJob after it are answered here, the session's uploads are copied to
a folder instead, and the SDK's telemetry is switched off.
"""

from __future__ import annotations

import contextlib
import datetime
import importlib
import itertools
import json
import logging
import os
import shutil
import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

_ids = itertools.count()
_DRY_RUN_KEY = "smmpi-dry-run-no-credentials"


def _quiet() -> None:
    """The SDK's loggers print INFO and WARNING lines of their own for every job (default
    region, default output path), on stdout; smmpi prints what it decided instead. Their
    modules set levels as they are imported, so this runs after the imports."""
    for name in list(logging.root.manager.loggerDict):
        if name.startswith(("sagemaker", "sagemaker_core")):
            logging.getLogger(name).setLevel(logging.ERROR)


def sdk_names() -> types.SimpleNamespace:
    """ModelTrainer and its configs, from whichever SDK this environment has."""
    try:
        train = importlib.import_module("sagemaker.train.model_trainer")  # v3
        configs = importlib.import_module("sagemaker.core.training.configs")
        distributed = importlib.import_module("sagemaker.train.distributed")
        session = importlib.import_module("sagemaker.core.helper.session_helper")
        client = importlib.import_module("sagemaker.core.utils.utils").SageMakerClient
        reset = client.reset
        version = "v3"
    except ImportError:
        train = importlib.import_module("sagemaker.modules.train.model_trainer")  # v2
        configs = importlib.import_module("sagemaker.modules.configs")
        distributed = importlib.import_module("sagemaker.modules.distributed")
        session = importlib.import_module("sagemaker_core.helper.session_helper")
        utils = importlib.import_module("sagemaker_core.main.utils")

        def reset() -> None:
            utils.SingletonMeta._instances.pop(utils.SageMakerClient, None)

        version = "v2"
    _quiet()
    return types.SimpleNamespace(
        ModelTrainer=train.ModelTrainer,
        configs=configs,
        MPI=distributed.MPI,
        Session=session.Session,
        reset_clients=reset,
        version=version,
    )


def _no_telemetry() -> None:
    """The SDK's telemetry would send a request to an AWS host the user never configured."""
    for name in (
        "sagemaker.core.telemetry.telemetry_logging",
        "sagemaker.telemetry.telemetry_logging",
    ):
        with contextlib.suppress(ImportError):
            module = importlib.import_module(name)
            for attr in ("_send_telemetry_request", "_send_telemetry_request_sync"):
                if hasattr(module, attr):
                    setattr(module, attr, lambda *args, **kwargs: None)


def trainer(spec: dict[str, Any], sdk: types.SimpleNamespace, session: Any) -> Any:
    """A ModelTrainer with ``distributed=MPI(...)`` for the job ``spec`` describes."""
    c = sdk.configs
    kwargs: dict[str, Any] = dict(
        training_image=spec["image"],
        role=spec["role"],
        sagemaker_session=session,
        base_job_name=spec["base_job_name"],
        source_code=c.SourceCode(source_dir=spec["source_dir"], entry_script=spec["entry_script"]),
        compute=c.Compute(
            instance_type=spec["instance_type"],
            instance_count=spec["instance_count"],
            volume_size_in_gb=spec["volume_size"],
            enable_managed_spot_training=spec["use_spot"] or None,
            keep_alive_period_in_seconds=spec["keep_alive"],
        ),
        distributed=sdk.MPI(
            process_count_per_node=spec["ppn"], mpi_additional_options=spec["mpi_options"]
        ),
        hyperparameters=spec["hyperparameters"] or None,
        environment=spec["environment"] or None,
        stopping_condition=c.StoppingCondition(
            max_runtime_in_seconds=spec["max_run"], max_wait_time_in_seconds=spec["max_wait"]
        ),
        tags=[c.Tag(key=k, value=v) for k, v in spec["tags"]],
    )
    if spec["checkpoint_s3_uri"]:
        kwargs["checkpoint_config"] = c.CheckpointConfig(s3_uri=spec["checkpoint_s3_uri"])
    if spec["inputs"]:
        kwargs["input_data_config"] = [
            c.InputData(channel_name=name, data_source=uri) for name, uri in spec["inputs"].items()
        ]
    if spec.get("output_path"):
        kwargs["output_data_config"] = c.OutputDataConfig(
            s3_output_path=spec["output_path"], compression_type="GZIP"
        )
    isolated = bool(spec.get("network_isolation"))
    encrypted = bool(spec.get("encrypt_inter_container_traffic"))
    networking = dict(
        subnets=spec["subnets"],
        security_group_ids=spec["security_groups"],
        enable_network_isolation=isolated,
        enable_inter_container_traffic_encryption=encrypted,
    )
    if any(networking.values()):  # each only when set (v2 needs a VPC: see model_trainer)
        kwargs["networking"] = c.Networking(**{k: v for k, v in networking.items() if v})
    made = sdk.ModelTrainer(**kwargs)
    chosen = [
        c.MetricDefinition(name=d["Name"], regex=d["Regex"])
        for d in spec.get("metric_definitions") or []
    ]
    return made.with_metric_definitions(chosen) if chosen else made


@contextlib.contextmanager
def answered(boto: Any, arn: str) -> Iterator[list[dict[str, Any]]]:
    """CreateTrainingJob recorded and answered here, and the DescribeTrainingJob after it."""
    from botocore.awsrequest import AWSResponse, HTTPHeaders

    seen: list[dict[str, Any]] = []
    events = boto._session  # clients made from this session afterwards copy its handlers
    uid = f"smmpi-mt-{next(_ids)}"

    def given(params: dict[str, Any], **_: Any) -> None:
        seen.append(dict(params))

    def created(**_: Any) -> tuple[Any, dict[str, Any]]:
        return AWSResponse("", 200, HTTPHeaders(), None), {"TrainingJobArn": arn}

    def described(**_: Any) -> tuple[Any, dict[str, Any]]:
        now = datetime.datetime.now(datetime.timezone.utc)
        answer = {**seen[-1], "TrainingJobArn": arn, "CreationTime": now}
        answer.update(TrainingJobStatus="InProgress", SecondaryStatus="Starting")
        return AWSResponse("", 200, HTTPHeaders(), None), answer

    hooks = [
        ("provide-client-params.sagemaker.CreateTrainingJob", given),
        ("before-call.sagemaker.CreateTrainingJob", created),
        ("before-call.sagemaker.DescribeTrainingJob", described),
    ]
    for event, handler in hooks:
        events.register(event, handler, unique_id=f"{uid}-{event}")
    try:
        yield seen
    finally:
        for event, _handler in hooks:
            events.unregister(event, unique_id=f"{uid}-{event}")


def recording_uploads(session: Any, bucket: str, keep: Path) -> dict[str, Path]:
    """The session's uploads become copies under ``keep``; returns channel -> copy."""
    copies: dict[str, Path] = {}

    def upload_data(path: str, bucket: str, key_prefix: str, **_: Any) -> str:
        channel = key_prefix.rstrip("/").rsplit("/", 1)[-1]
        target = keep / "channels" / channel
        if Path(path).is_dir():
            shutil.copytree(path, target, ignore=shutil.ignore_patterns("__pycache__"))
        copies[channel] = target
        return f"s3://{bucket}/{key_prefix}"

    session.upload_data = upload_data
    session.default_bucket = lambda: bucket
    return copies


def capture(spec: dict[str, Any], boto: Any, keep: Path) -> tuple[dict[str, Any], dict[str, Path]]:
    """The request ``ModelTrainer.train`` sends for ``spec``, and each uploaded channel's copy."""
    sdk = sdk_names()
    _no_telemetry()
    session = sdk.Session(boto_session=boto, default_bucket=spec["bucket"])
    copies = recording_uploads(session, spec["bucket"], keep)
    arn = f"arn:aws:sagemaker:{spec['region']}:000000000000:training-job/dry-run"
    sdk.reset_clients()  # the SDK keeps one client per process: this job's is made from boto
    built = trainer(spec, sdk, session)
    _quiet()
    try:
        with answered(boto, arn) as seen:
            built.train(wait=False, logs=False)
    finally:
        sdk.reset_clients()
    if not seen:
        raise RuntimeError("ModelTrainer did not build a CreateTrainingJob request")
    return seen[-1], copies


def offline_boto(region: str) -> Any:
    """A boto3 session with dummy keys that refuses every HTTP request."""
    import boto3

    def refuse(request: Any, **_: Any) -> None:
        raise RuntimeError(f"a dry run must not reach the network ({request.url.split('?')[0]})")

    boto = boto3.Session(
        region_name=region, aws_access_key_id=_DRY_RUN_KEY, aws_secret_access_key=_DRY_RUN_KEY
    )
    boto.events.register("before-send", refuse)
    return boto


def main() -> int:
    """``python trainer_capture.py KEEP < spec.json``: the request and channels as JSON."""
    spec = json.load(sys.stdin)
    keep = Path(sys.argv[1])
    # v3 checks the role's permissions with IAM calls before it builds the request
    os.environ["SAGEMAKER_VALIDATE_ROLE"] = "false"
    request, copies = capture(spec, offline_boto(spec["region"]), keep)
    out = {
        "sdk": sdk_names().version,
        "request": request,
        "channels": {k: str(v) for k, v in copies.items()},
    }
    print(json.dumps(out, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
