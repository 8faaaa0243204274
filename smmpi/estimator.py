"""MPIJob -> SageMaker SDK v2 estimator (TensorFlow or PyTorch), and the session behind it.

This is the only module that talks to the SDK, so a v3 ``ModelTrainer``
backend can be added beside it later. What it guarantees:

- the session honours ``AWS_ENDPOINT_URL`` (a moto server in tests), the
  region and the bucket. The SDK would otherwise call regional STS hosts
  directly to name its default bucket, so the account and bucket are resolved
  here through clients that honour the endpoint, and passed as
  ``default_bucket``;
- SDK telemetry is off: the documented ``TelemetryOptOut`` setting is given to
  the session, and the emitter is disabled as well, because it would send a
  request to an AWS host the user never configured;
- the source dir is packed here (entry point + helper, nothing else) and the
  estimator is handed its S3 URI, so the SDK uploads nothing on its own;
- an offline build (dry run) uses dummy credentials and a hook that refuses
  every HTTP request: building and capturing the request needs no network.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import functools
import gzip
import io
import json
import logging
import os
import tarfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from smmpi import config
from smmpi.errors import BadInput, SmmpiError
from smmpi.spec import (
    BUCKET_RE,
    REGION_RE,
    ROLE_ARN_RE,
    SMMPI_TAG_KEY,
    SMMPI_TAG_VALUE,
    MPIJob,
    check_vpc_ids,
)

if TYPE_CHECKING:
    import boto3

ROLE_PLACEHOLDER = "<role: set --role or SMMPI_ROLE>"
BUCKET_PLACEHOLDER = "<bucket: set --bucket or SMMPI_BUCKET>"
# Stand-ins the SDK accepts while building offline; swapped for the placeholders after.
_ROLE_SENTINEL = "arn:aws:iam::000000000000:role/smmpi-dry-run-role-placeholder"
_BUCKET_SENTINEL = "smmpi-dry-run-bucket-placeholder"
_DRY_RUN_KEY = "smmpi-dry-run"  # dummy credentials: never sent anywhere
FALLBACK_REGION = "us-east-1"

# The SDK's documented switch (SageMaker.PythonSDK.Modules.TelemetryOptOut).
TELEMETRY_OPT_OUT_CONFIG: dict[str, Any] = {
    "SchemaVersion": "1.0",
    "SageMaker": {"PythonSDK": {"Modules": {"TelemetryOptOut": True}}},
}


@functools.lru_cache(maxsize=1)
def import_sdk() -> Any:
    """Import the SDK quietly, with telemetry unable to leave the process.

    The v2 deprecation banner is suppressed through the SDK's own variable (set
    before import), its INFO chatter about config files is silenced, and the
    schema check the SDK repeats on every config lookup is memoised: our config
    is a constant, and re-validating it ~20 times per job costs seconds.
    """
    os.environ.setdefault("SAGEMAKER_SUPPRESS_V2_WARNING", "1")
    _quiet_sdk_loggers()
    # Importing the SDK builds a default JumpStart session, which resolves
    # credentials; with none configured botocore would ask the instance
    # metadata service (169.254.169.254). Nothing is called with that session,
    # so the lookup is switched off for the import only.
    try:
        with no_metadata_lookups(), _sessions_share_loader(), _keep_root_logging():
            import sagemaker
            import sagemaker.experiments  # imported by fit(); configures logging on import
            import sagemaker.utils
            from sagemaker.telemetry import telemetry_logging
    except ImportError as err:  # pragma: no cover - depends on the install
        raise SmmpiError("the SageMaker SDK is not installed: pip install 'smmpi[aws]'") from err

    def _no_telemetry(*args: Any, **kwargs: Any) -> None:
        return None

    telemetry_logging._send_telemetry_request = _no_telemetry
    sdk_utils: Any = sagemaker.utils
    validate = sdk_utils.validate_sagemaker_config
    # Our own config is a constant that tests validate against the SDK's schema.
    checked: set[str] = {json.dumps(TELEMETRY_OPT_OUT_CONFIG, sort_keys=True)}

    def _validate_once(cfg: Any = None) -> Any:
        key = json.dumps(cfg, sort_keys=True, default=str)
        if key in checked:
            return None
        result = validate(cfg)
        checked.add(key)
        return result

    sdk_utils.validate_sagemaker_config = _validate_once
    sdk_session_module: Any = sagemaker.session
    sdk_session_module.validate_sagemaker_config = _validate_once
    _quiet_sdk_loggers()  # the SDK sets its config logger to INFO while importing
    return sagemaker


@contextlib.contextmanager
def _keep_root_logging() -> Iterator[None]:
    """Undo the SDK's import-time ``logging.basicConfig(level=INFO)`` on the root logger.

    Left in place it makes botocore print INFO lines on stderr for every client.
    """
    root = logging.getLogger()
    level, handlers = root.level, list(root.handlers)
    try:
        yield
    finally:
        root.setLevel(level)
        for handler in list(root.handlers):
            if handler not in handlers:
                root.removeHandler(handler)


@contextlib.contextmanager
def no_metadata_lookups() -> Iterator[None]:
    """Keep botocore's credential chain off the instance metadata service for a while.

    The SDK builds throwaway clients on the default credential chain (a
    JumpStart session at import, a TensorBoard helper in every estimator).
    They are never called, but resolving their credentials without any
    configured would reach 169.254.169.254: a dry run must not.
    """
    saved = os.environ.get("AWS_EC2_METADATA_DISABLED")
    os.environ["AWS_EC2_METADATA_DISABLED"] = "true"
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop("AWS_EC2_METADATA_DISABLED", None)
        else:
            os.environ["AWS_EC2_METADATA_DISABLED"] = saved


@contextlib.contextmanager
def _sessions_share_loader() -> Iterator[None]:
    """Botocore sessions created meanwhile use smmpi's data loader.

    Importing the SDK builds a JumpStart session and a SageMaker client on it,
    which would parse the SageMaker API model a second time (~0.15 s of every
    dry run). Sessions made with a custom AWS_DATA_PATH keep their own loader.
    """
    import botocore.session

    from smmpi.spec import shared_loader

    original = botocore.session.create_loader

    def create(search_paths_str: Any = None) -> Any:
        return original(search_paths_str) if search_paths_str else shared_loader()

    botocore_session_module: Any = botocore.session
    botocore_session_module.create_loader = create
    try:
        yield
    finally:
        botocore_session_module.create_loader = original


def _quiet_sdk_loggers() -> None:
    for name in (
        "sagemaker",
        "sagemaker.config",
        "sagemaker.image_uris",
        "sagemaker.telemetry.telemetry_logging",
    ):
        logging.getLogger(name).setLevel(logging.WARNING)


@dataclass(frozen=True)
class Settings:
    """Where the job goes: role, bucket and region after the documented precedence."""

    role: str
    bucket: str
    region: str
    endpoint_url: str | None = None
    placeholders: dict[str, str] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    subnets: tuple[str, ...] = ()
    security_groups: tuple[str, ...] = ()


def _checked(name: str, value: str | None, pattern: Any, allowed: str) -> str | None:
    if value is not None and not pattern.match(value):
        source = f" (from {config.ENV_OF[name]} or {config.path()})"
        raise BadInput(name + source, value, allowed)
    return value


def _profile_region() -> str | None:
    """The region from AWS_REGION/AWS_DEFAULT_REGION or the profile's config file.

    botocore's own region chain ends at the instance metadata service, a
    network call a dry run must not make; only files and variables are read.
    """
    for var in ("AWS_REGION", "AWS_DEFAULT_REGION"):
        if os.environ.get(var):
            return os.environ[var]
    try:
        import botocore.session

        region = botocore.session.Session().get_scoped_config().get("region")
    except Exception:  # no botocore, or a broken profile: a dry run still works
        return None
    return str(region) if region else None


def resolve_settings(job: MPIJob, *, offline: bool) -> Settings:
    """Role, bucket, region: the job's value, then SMMPI_* env, then the config file.

    Offline (dry run) a missing role or bucket becomes a marked placeholder; a
    missing region falls back to AWS's config, then us-east-1, with a note.
    Online, a missing role is an error, and a missing bucket is named
    ``sagemaker-{region}-{account}`` (the SDK's default) from STS reached
    through the configured endpoint.
    """
    role = _checked(
        "role",
        config.setting("role", job.role),
        ROLE_ARN_RE,
        "an IAM role ARN like arn:aws:iam::123456789012:role/NAME",
    )
    bucket = _checked(
        "bucket",
        config.setting("bucket", job.bucket),
        BUCKET_RE,
        "an S3 bucket name (3-63 of a-z 0-9 . -)",
    )
    region = _checked(
        "region",
        config.setting("region", job.region),
        REGION_RE,
        "an AWS region name like us-west-2",
    )
    notes: list[str] = []
    region = region or _profile_region()
    if region is None:
        if not offline:
            raise BadInput(
                "region",
                None,
                "a region: --region, SMMPI_REGION, AWS_REGION or an AWS profile with a region",
            )
        region = FALLBACK_REGION
        notes.append(
            f"region: none configured, showing {FALLBACK_REGION} (set --region or SMMPI_REGION)"
        )
    placeholders: dict[str, str] = {}
    if role is None:
        if not offline:
            raise BadInput(
                "role", None, "an IAM role ARN via --role, SMMPI_ROLE or `smmpi infra deploy`"
            )
        role, placeholders[_ROLE_SENTINEL] = _ROLE_SENTINEL, ROLE_PLACEHOLDER
    if bucket is None and offline:
        bucket, placeholders[_BUCKET_SENTINEL] = _BUCKET_SENTINEL, BUCKET_PLACEHOLDER
    subnets, groups = resolve_vpc(job)
    endpoint = os.environ.get("AWS_ENDPOINT_URL_SAGEMAKER") or os.environ.get("AWS_ENDPOINT_URL")
    return Settings(
        role=role,
        bucket=bucket or "",
        region=region,
        endpoint_url=endpoint,
        placeholders=placeholders,
        notes=tuple(notes),
        subnets=subnets,
        security_groups=groups,
    )


def resolve_vpc(job: MPIJob) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Subnets and security groups: each from the job (flag), else from the config file.

    ``smmpi infra deploy --vpc-id`` saves ``security_group_ids`` (and
    ``subnets`` when given), so jobs run in that VPC with no flags; a flag
    replaces the saved value of its own kind only. A VPC needs both.
    """
    saved = config.load()
    where = f" (from {config.path()})"
    subnets = tuple(job.subnets or ()) or check_vpc_ids("subnets", saved.get("subnets"), where)
    groups = tuple(job.security_groups or ()) or check_vpc_ids(
        "security_groups", saved.get("security_group_ids"), where
    )
    if bool(subnets) != bool(groups):
        missing = "security_groups" if subnets else "subnets"
        flag = "--security-group" if subnets else "--subnet"
        raise BadInput(
            missing,
            "(none)",
            f"subnets and security groups together (a VPC needs both): pass {flag} "
            f"or save it with `smmpi infra deploy --vpc-id`",
        )
    return subnets, groups


def boto_session(settings: Settings, *, offline: bool) -> boto3.Session:
    """A boto3 session for the region; offline, dummy keys and no HTTP at all."""
    import boto3

    if not offline:
        return boto3.Session(region_name=settings.region, botocore_session=_botocore_session())
    return _offline_session(settings.region)


def _botocore_session() -> Any:
    """A botocore session sharing smmpi's data loader (unless AWS_DATA_PATH customises it)."""
    import botocore.session

    from smmpi.spec import shared_loader

    session = botocore.session.Session()
    if not os.environ.get("AWS_DATA_PATH"):
        session.register_component("data_loader", shared_loader())
    return session


@functools.lru_cache(maxsize=8)
def _offline_session(region: str) -> boto3.Session:
    """One per region and process: botocore caches parsed API models per session."""
    import boto3

    session = boto3.Session(
        region_name=region,
        aws_access_key_id=_DRY_RUN_KEY,
        aws_secret_access_key=_DRY_RUN_KEY,
        botocore_session=_botocore_session(),
    )
    session.events.register("before-send", _refuse_http)
    return session


def _refuse_http(request: Any, **kwargs: Any) -> None:
    raise SmmpiError(
        f"a dry run must not reach the network (attempted {request.method} "
        f"{request.url.split('?')[0]})"
    )


def account_and_bucket(settings: Settings, session: boto3.Session) -> Settings:
    """Fill in the default bucket ``sagemaker-{region}-{account}`` via an endpoint-honouring STS."""
    if settings.bucket:
        return settings
    account = session.client("sts").get_caller_identity()["Account"]
    bucket = f"sagemaker-{settings.region}-{account}"
    return dataclasses.replace(settings, bucket=bucket)


def sdk_session(settings: Settings, boto: boto3.Session) -> Any:
    """A SageMaker Session on ``boto`` with our bucket and telemetry opted out."""
    sagemaker = import_sdk()
    return sagemaker.session.Session(
        boto_session=boto,
        default_bucket=settings.bucket,
        sagemaker_config=copy.deepcopy(TELEMETRY_OPT_OUT_CONFIG),
    )


def generate_job_name(job: MPIJob, now: datetime | None = None) -> str:
    """``{base}-YYYY-mm-dd-HH-MM-SS-mmm`` as the SDK names jobs; base defaults to smmpi-ENTRY."""
    if job.job_name:
        return job.job_name
    base = job.base_job_name or default_base_name(job)
    now = now or datetime.now(timezone.utc)
    return f"{base}-{now:%Y-%m-%d-%H-%M-%S}-{now.microsecond // 1000:03d}"


def default_base_name(job: MPIJob) -> str:
    import re

    name = re.sub(r"[^a-zA-Z0-9-]+", "-", job.program.name).strip("-") or "job"
    return f"smmpi-{name}"[:39].rstrip("-")


def code_key(job_name: str) -> str:
    """Where the source dir goes in the bucket (the SDK's own layout)."""
    return f"{job_name}/source/sourcedir.tar.gz"


def source_members(job: MPIJob) -> list[str]:
    """Archive names of the uploaded source dir, in order."""
    return [name for _, name in job.program.files()]


def pack_source(job: MPIJob) -> bytes:
    """``sourcedir.tar.gz`` of exactly the program's files, reproducible byte for byte."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for path, name in job.program.files():
            data = path.read_bytes()
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(data), 0o644, 0
            tar.addfile(info, io.BytesIO(data))
    out = io.BytesIO()
    with gzip.GzipFile(fileobj=out, mode="wb", mtime=0) as gz:
        gz.write(raw.getvalue())
    return out.getvalue()


@dataclass
class Built:
    """An estimator ready for ``fit``, with everything decided around it."""

    job: MPIJob
    estimator: Any
    session: Any
    boto: Any
    settings: Settings
    job_name: str
    code_uri: str
    offline: bool


def build(
    job: MPIJob,
    *,
    offline: bool = False,
    job_name: str | None = None,
    settings: Settings | None = None,
    boto: Any = None,
) -> Built:
    """The TensorFlow/PyTorch estimator for ``job``.

    Offline (dry run), no credentials or network are used and missing settings
    are placeholders. Online, the account and default bucket are resolved
    through the configured endpoint (this is an STS call, nothing is created).
    """
    settings = settings or resolve_settings(job, offline=offline)
    boto = boto or boto_session(settings, offline=offline)
    if not offline:
        settings = account_and_bucket(settings, boto)
    name = job_name or generate_job_name(job)
    code_uri = f"s3://{settings.bucket}/{code_key(name)}"
    with no_metadata_lookups() if offline else contextlib.nullcontext():
        session = sdk_session(settings, boto)
        estimator = _estimator(job, session, settings, code_uri)
    return Built(
        job=job,
        estimator=estimator,
        session=session,
        boto=boto,
        settings=settings,
        job_name=name,
        code_uri=code_uri,
        offline=offline,
    )


def _share_default_session_loader() -> None:
    """Let boto3's default session reuse smmpi's data loader.

    Every SDK estimator builds a throwaway SageMaker client on boto3's default
    session (its TensorBoard helper); sharing the loader saves parsing the
    SageMaker API model again. A default session the program set up is left alone.
    """
    import boto3

    if boto3.DEFAULT_SESSION is None:
        boto3.setup_default_session(botocore_session=_botocore_session())


def _estimator(job: MPIJob, session: Any, settings: Settings, code_uri: str) -> Any:
    import importlib

    import_sdk()
    _share_default_session_loader()
    module, name = (
        ("sagemaker.pytorch", "PyTorch")
        if job.framework == "pytorch"
        else ("sagemaker.tensorflow", "TensorFlow")
    )
    Estimator: Any = getattr(importlib.import_module(module), name)
    tags = [{"Key": SMMPI_TAG_KEY, "Value": SMMPI_TAG_VALUE}]
    tags += [{"Key": k, "Value": v} for k, v in job.tag_map.items() if k != SMMPI_TAG_KEY]
    kwargs: dict[str, Any] = dict(
        entry_point=job.program.script,
        source_dir=code_uri,
        role=settings.role,
        framework_version=job.framework_version,
        py_version=job.py_version,
        instance_count=job.instances,
        instance_type=job.instance_type,
        distribution=job.distribution,
        hyperparameters=job.hyperparameter_map or None,
        environment=job.env_map or None,
        max_run=job.max_run,
        volume_size=job.volume_size,
        tags=tags,
        output_path=job.output_path or f"s3://{settings.bucket}/",
        base_job_name=job.base_job_name or default_base_name(job),
        sagemaker_session=session,
        # The debugger hook and the profiler's ProfilerReport rule start extra
        # processing jobs and bill for them; an MPI program does not use them.
        debugger_hook_config=False,
        disable_profiler=True,
        encrypt_inter_container_traffic=job.encrypt_inter_container_traffic,
        enable_network_isolation=job.network_isolation,
        container_log_level=logging.INFO,
    )
    if job.use_spot:
        kwargs.update(use_spot_instances=True, max_wait=job.max_wait)
    if job.checkpoint_s3_uri:
        kwargs["checkpoint_s3_uri"] = job.checkpoint_s3_uri
    if job.keep_alive is not None:
        kwargs["keep_alive_period_in_seconds"] = job.keep_alive
    if settings.subnets:
        kwargs.update(
            subnets=list(settings.subnets), security_group_ids=list(settings.security_groups)
        )
    return Estimator(**kwargs)


def fit_inputs(job: MPIJob) -> dict[str, str] | None:
    """The ``inputs`` argument of the SDK's ``fit``: channel name -> s3:// URI, or None."""
    return job.input_map or None


def capture_request(built: Built) -> dict[str, Any]:
    """The CreateTrainingJob parameters exactly as boto3 receives them, without sending them.

    ``estimator.fit`` runs for real; a hook on the client records the
    parameters (after botocore validated them against the API model) and
    answers in place of SageMaker. Offline placeholders are restored after.
    """
    from botocore.awsrequest import AWSResponse, HTTPHeaders

    client = built.session.sagemaker_client
    seen: list[dict[str, Any]] = []

    def record(params: dict[str, Any], **kwargs: Any) -> None:
        seen.append(copy.deepcopy(params))

    def answer(**kwargs: Any) -> tuple[Any, dict[str, Any]]:
        arn = (
            f"arn:aws:sagemaker:{built.settings.region}:000000000000:training-job/" + built.job_name
        )
        return AWSResponse("", 200, HTTPHeaders(), None), {"TrainingJobArn": arn}

    events = client.meta.events
    events.register(
        "provide-client-params.sagemaker.CreateTrainingJob", record, unique_id="smmpi-record"
    )
    events.register("before-call.sagemaker.CreateTrainingJob", answer, unique_id="smmpi-answer")
    try:
        with no_metadata_lookups() if built.offline else contextlib.nullcontext():
            built.estimator.fit(
                fit_inputs(built.job), wait=False, logs=False, job_name=built.job_name
            )
    finally:
        events.unregister(
            "provide-client-params.sagemaker.CreateTrainingJob", unique_id="smmpi-record"
        )
        events.unregister("before-call.sagemaker.CreateTrainingJob", unique_id="smmpi-answer")
    if not seen:
        raise SmmpiError("the SDK did not build a CreateTrainingJob request")
    return restore_placeholders(seen[-1], built.settings.placeholders)


def restore_placeholders(request: dict[str, Any], placeholders: dict[str, str]) -> dict[str, Any]:
    if not placeholders:
        return request
    text = json.dumps(request)
    for sentinel, shown in placeholders.items():
        text = text.replace(sentinel, shown)
    restored: dict[str, Any] = json.loads(text)
    return restored
