"""MPIJob: the one place where a job's fields, defaults and checks live.

The SageMaker SDK does not validate the ``mpi`` distribution block (a misspelt
``process_per_host`` is silently dropped and the job runs one process per
host), so every field is checked here, before any AWS call or process start.
A bad field raises :class:`~smmpi.errors.BadInput` naming the field, the value
and what is allowed; an unknown keyword lists the valid ones.

Importing this module is cheap: the SDK is imported only by the methods that
build an estimator or submit.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import importlib.util
import json
import re
import shlex
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar, overload

from smmpi.catalog import Program, resolve
from smmpi.errors import BadInput, SmmpiError

if TYPE_CHECKING:
    from smmpi.local.job import LocalJob
    from smmpi.plan import Plan
    from smmpi.submit import Submission

# Jobs smmpi creates carry this tag (value "true"), so `smmpi jobs` can list them.
SMMPI_TAG_KEY = "smmpi:managed"
SMMPI_TAG_VALUE = "true"

FRAMEWORKS = ("tensorflow", "pytorch")
DEFAULT_FRAMEWORK = "tensorflow"
# Current CPU training images that sagemaker 2.257 resolves (image_uri_config/*.json).
# Both DLC images install Open MPI 4 and mpi4py (their Dockerfile.cpu), so no
# requirements.txt is added to the source dir for them.
DEFAULT_VERSIONS: dict[str, tuple[str, str]] = {
    "tensorflow": ("2.19.0", "py312"),
    "pytorch": ("2.8.0", "py312"),
}
DEFAULT_INSTANCE_TYPE = "ml.c5.2xlarge"  # 8 vCPUs, as in the reference run (seed 004)
# One hour, not the SDK's 24: a hung MPI job burns money until max_run.
DEFAULT_MAX_RUN = 3600
DEFAULT_VOLUME_SIZE = 30
MAX_RUN_LIMIT = 28 * 24 * 3600  # SageMaker's ceiling for MaxRuntimeInSeconds
KEEP_ALIVE_LIMIT = 3600  # warm pools keep instances at most one hour

# SageMaker API patterns (botocore's sagemaker service model).
JOB_NAME_RE = re.compile(r"^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$")
ROLE_ARN_RE = re.compile(r"^arn:aws[a-z\-]*:iam::\d{12}:role/?[a-zA-Z_0-9+=,.@\-_/]+$")
ENV_KEY_RE = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")
BUCKET_RE = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")
REGION_RE = re.compile(r"^[a-z]{2}(-[a-z]+)+-\d+$")
INSTANCE_TYPE_RE = re.compile(r"^ml\.[a-z0-9-]+\.[a-z0-9]+$")
SUBNET_RE = re.compile(r"^subnet-[0-9a-f]+$")
SECURITY_GROUP_RE = re.compile(r"^sg-[0-9a-f]+$")
TAG_RE = re.compile(r"^[\w.:/=+\-@ ]*$")
# CreateTrainingJob's Channel.ChannelName pattern and length.
CHANNEL_RE = re.compile(r"^[A-Za-z0-9\.\-_]+$")
CHANNEL_MAX = 64
S3_URI_RE = re.compile(r"s3://[a-z0-9][a-z0-9.-]{1,61}[a-z0-9](/.*)?")
# Characters a shell would act on. The container splits custom MPI options on
# whitespace and never runs a shell, so quotes cannot work either: refuse them.
MPI_OPTION_FORBIDDEN = frozenset(";&|<>$`\\(){}*?!~#'\"\n\r")
# The date suffix the SDK appends to a base job name: -YYYY-mm-dd-HH-MM-SS-mmm.
JOB_NAME_SUFFIX_LEN = 24

_T = TypeVar("_T")
# The SDK's names for our fields, and its classic misspelling, point to ours.
_ALIASES = {
    "processes_per_host": "ppn",
    "process_per_host": "ppn",
    "instance_count": "instances",
    "entry_point": "entry",
    "environment": "env",
    "custom_mpi_options": "mpi_options",
    "use_spot_instances": "use_spot",
    "keep_alive_period_in_seconds": "keep_alive",
    "enable_network_isolation": "network_isolation",
    "security_group_ids": "security_groups",
    "volume_size_in_gb": "volume_size",
}


class UnknownField(BadInput, TypeError):
    """A keyword MPIJob does not have (a TypeError too, as Python would raise)."""


def _strict_kwargs(cls: type[_T]) -> type[_T]:
    """Make unknown keywords fail with the list of valid ones, not a bare TypeError."""
    names = [f.name for f in dataclasses.fields(cls) if f.init]  # type: ignore[arg-type]
    original: Callable[..., None] = cls.__init__  # type: ignore[misc]

    @functools.wraps(original)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        for key in kwargs:
            if key not in names:
                close = [_ALIASES[key]] if key in _ALIASES else []
                close = close or difflib.get_close_matches(key, names, n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                raise UnknownField(key, kwargs[key], "one of " + ", ".join(names) + hint)
        original(self, *args, **kwargs)

    cls.__init__ = __init__  # type: ignore[method-assign,misc]
    return cls


def parse_pairs(field_name: str, pairs: Sequence[str] | Mapping[str, Any] | None) -> dict[str, str]:
    """``["K=V", ...]`` (the CLI form) or a mapping -> dict; a pair without ``=`` is refused."""
    if pairs is None:
        return {}
    if isinstance(pairs, Mapping):
        return {str(k): _scalar(field_name, k, v) for k, v in pairs.items()}
    if isinstance(pairs, str):
        pairs = [pairs]
    out: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = str(pair).partition("=")
        if not sep or not key:
            raise BadInput(field_name, pair, "KEY=VALUE pairs (an '=' after a non-empty key)")
        out[key] = value
    return out


def _scalar(field_name: str, key: object, value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (str, int, float)):
        return str(value)
    raise BadInput(f"{field_name}[{key}]", value, "a string, number or bool")


def parse_mpi_options(options: str | Sequence[str] | None) -> tuple[str, ...]:
    """Custom mpirun options as an argv tuple, never passing through a shell.

    The container toolkit splits the string on whitespace, so anything a shell
    or a quote would change is refused rather than silently mangled.
    """
    if options is None:
        return ()
    text = options if isinstance(options, str) else " ".join(options)
    bad = sorted({c for c in text if c in MPI_OPTION_FORBIDDEN})
    if bad:
        shown = " ".join(repr(c) for c in bad)
        raise BadInput(
            "mpi_options",
            text,
            "plain mpirun options separated by spaces "
            f"(no shell metacharacters or quotes; found {shown})",
        )
    argv = tuple(shlex.split(text, posix=True))
    if argv and not argv[0].startswith("-"):
        raise BadInput("mpi_options", text, "mpirun options starting with '-'")
    return argv


@functools.lru_cache(maxsize=1)
def _sdk_data_dir() -> Path | None:
    """The installed SDK's package dir, located without importing it (import is slow)."""
    spec = importlib.util.find_spec("sagemaker")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


@functools.lru_cache(maxsize=4)
def training_versions(framework: str) -> dict[str, Any]:
    """The SDK's own table of training images for ``framework`` (what image_uris uses)."""
    root = _sdk_data_dir()
    if root is None:
        raise SmmpiError("the SageMaker SDK is not installed: pip install 'smmpi[aws]'")
    data = json.loads((root / "image_uri_config" / f"{framework}.json").read_text())
    scope: dict[str, Any] = data["training"]
    return scope


def resolve_versions(
    framework: str, version: str | None, py_version: str | None
) -> tuple[str, str]:
    """Check a framework/python version pair against the SDK's image table."""
    default_version, default_py = DEFAULT_VERSIONS[framework]
    version = version or default_version
    table = training_versions(framework)
    full = table.get("version_aliases", {}).get(version, version)
    entry = table["versions"].get(full)
    if entry is None:
        known = sorted(table["versions"], key=_version_key)[-6:]
        raise BadInput(
            "framework_version",
            version,
            f"a {framework} training version the SDK knows, e.g. " + ", ".join(known),
        )
    pys: list[str] = entry.get("py_versions", [])
    if py_version is None:
        py_version = default_py if default_py in pys or not pys else pys[-1]
    if pys and py_version not in pys:
        raise BadInput("py_version", py_version, f"{', '.join(pys)} (for {framework} {version})")
    return version, py_version


def _version_key(v: str) -> tuple[int, ...]:
    return tuple(int(p) if p.isdigit() else -1 for p in v.split("."))


@functools.lru_cache(maxsize=1)
def shared_loader() -> Any:
    """One botocore data loader per process: the SageMaker API model parses once (~0.1 s)."""
    from botocore.loaders import create_loader

    return create_loader()


@functools.lru_cache(maxsize=1)
def known_instance_types() -> frozenset[str] | None:
    """SageMaker's TrainingInstanceType enum from botocore's model, or None without botocore."""
    try:
        loader = shared_loader()
    except ImportError:
        return None
    model = loader.load_service_model("sagemaker", "service-2")
    return frozenset(model["shapes"]["TrainingInstanceType"]["enum"])


def vcpus(instance_type: str) -> int | None:
    """vCPUs of an instance size by EC2's naming rule (large=2, xlarge=4, Nxlarge=4N)."""
    size = instance_type.rsplit(".", 1)[-1]
    if size == "medium":
        return 1
    if size == "large":
        return 2
    m = re.fullmatch(r"(\d*)xlarge", size)
    if m:
        return 4 * int(m.group(1) or 1)
    return None


def _positive_int(name: str, value: object, upper: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, str) and value.strip().isdigit():
            value = int(value.strip())
        else:
            raise BadInput(name, value, "an integer >= 1")
    assert isinstance(value, int)
    if value < 1 or (upper is not None and value > upper):
        raise BadInput(name, value, f"an integer from 1 to {upper}" if upper else "an integer >= 1")
    return value


def _s3_uri(name: str, value: str | None) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not S3_URI_RE.fullmatch(value):
        raise BadInput(name, value, "an s3://bucket/prefix URI")
    return value


def _seconds(name: str, value: object, low: int, high: int) -> int:
    """An integer number of seconds in [low, high]; digit strings (the CLI form) are accepted."""
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise BadInput(name, value, f"seconds from {low} to {high}")
    return value


# VpcConfig limits in the SageMaker API: 1-16 subnets, 1-5 security groups.
_VPC_RULES = {
    "subnets": (SUBNET_RE, 16, "subnet IDs like subnet-0123abcd"),
    "security_groups": (SECURITY_GROUP_RE, 5, "security group IDs like sg-0123abcd"),
}


def check_vpc_ids(name: str, values: object, source: str = "") -> tuple[str, ...]:
    """Subnet or security group IDs as a tuple; ``source`` says where they came from."""
    pattern, limit, allowed = _VPC_RULES[name]
    if values is None:
        return ()
    items = (values,) if isinstance(values, str) else values
    if not isinstance(items, (list, tuple)):
        raise BadInput(name + source, values, "a list of " + allowed)
    for item in items:
        if not isinstance(item, str) or not pattern.match(item):
            raise BadInput(name + source, item, allowed)
    if len(items) > limit:
        raise BadInput(name + source, len(items), f"at most {limit} {allowed}")
    return tuple(items)


def parse_inputs(inputs: Mapping[str, Any] | Sequence[str] | None) -> dict[str, str]:
    """Input channels as ``{name: uri}``: the name is SageMaker's channel pattern.

    The URI must be ``s3://bucket/prefix`` or ``file:///path`` (an existing
    path). ``file://`` runs only locally; :func:`require_s3_inputs` refuses it
    for SageMaker, because the spec does not know yet where it will run.
    """
    channels = parse_pairs("inputs", inputs)
    for name, uri in channels.items():
        if not CHANNEL_RE.match(name) or len(name) > CHANNEL_MAX:
            raise BadInput(
                "inputs",
                name,
                f"a channel name of 1-{CHANNEL_MAX} letters, digits and . - _",
            )
        if uri.startswith("file://"):
            path = Path(uri[len("file://") :])
            if not path.is_absolute() or not path.exists():
                raise BadInput(f"inputs.{name}", uri, "file:// and an existing absolute path")
        elif not S3_URI_RE.fullmatch(uri):
            raise BadInput(
                f"inputs.{name}", uri, "an s3://bucket/prefix URI (or file:///path with --local)"
            )
    return channels


def require_s3_inputs(job: MPIJob) -> None:
    """Refuse ``file://`` channels for SageMaker: only a local run can read this machine."""
    for name, uri in job.input_map.items():
        if not uri.startswith("s3://"):
            raise BadInput(
                f"inputs.{name}", uri, "an s3://bucket/prefix URI (file:// works only with --local)"
            )


@_strict_kwargs
@dataclass(frozen=True)
class MPIJob:
    """One MPI job: N instances x n processes of ``entry``, validated on construction.

    ``framework``, ``framework_version`` and ``py_version`` left as None take the
    pinned defaults (or the entry point's framework). ``role``, ``bucket`` and
    ``region`` left as None are resolved at submit time (flag, env, config
    file); a dry run shows them as marked placeholders.
    """

    entry: str
    instances: int = 1
    ppn: int = 1
    source_dir: str | None = None
    instance_type: str = DEFAULT_INSTANCE_TYPE
    framework: str | None = None
    framework_version: str | None = None
    py_version: str | None = None
    role: str | None = None
    bucket: str | None = None
    region: str | None = None
    mpi_options: str | Sequence[str] | None = None
    hyperparameters: Mapping[str, Any] | Sequence[str] | None = None
    env: Mapping[str, Any] | Sequence[str] | None = None
    max_run: int = DEFAULT_MAX_RUN
    volume_size: int = DEFAULT_VOLUME_SIZE
    tags: Mapping[str, Any] | Sequence[str] | None = None
    base_job_name: str | None = None
    job_name: str | None = None
    output_path: str | None = None
    use_spot: bool = False
    max_wait: int | None = None
    checkpoint_s3_uri: str | None = None
    keep_alive: int | None = None
    encrypt_inter_container_traffic: bool = False
    network_isolation: bool = False
    subnets: Sequence[str] | None = None
    security_groups: Sequence[str] | None = None
    inputs: Mapping[str, str] | Sequence[str] | None = None
    program: Program = field(init=False, repr=False, compare=False)
    notes: tuple[str, ...] = field(init=False, repr=False, compare=False, default=())

    def __post_init__(self) -> None:
        set_ = functools.partial(object.__setattr__, self)
        notes: list[str] = []
        set_("instances", _positive_int("instances", self.instances))
        set_("ppn", _positive_int("ppn", self.ppn))
        self._check_instance_type(notes)
        program = resolve(self.entry, self.source_dir)
        set_("program", program)
        framework = self.framework or program.framework_hint or DEFAULT_FRAMEWORK
        if framework not in FRAMEWORKS:
            raise BadInput("framework", framework, " or ".join(FRAMEWORKS))
        set_("framework", framework)
        version, py = resolve_versions(framework, self.framework_version, self.py_version)
        set_("framework_version", version)
        set_("py_version", py)
        if self.role is not None and not ROLE_ARN_RE.match(self.role):
            raise BadInput(
                "role", self.role, "an IAM role ARN like arn:aws:iam::123456789012:role/NAME"
            )
        if self.bucket is not None and not BUCKET_RE.match(self.bucket):
            raise BadInput("bucket", self.bucket, "an S3 bucket name (3-63 of a-z 0-9 . -)")
        if self.region is not None and not REGION_RE.match(self.region):
            raise BadInput("region", self.region, "an AWS region name like us-west-2")
        set_("mpi_options", " ".join(parse_mpi_options(self.mpi_options)))
        self._check_maps()
        set_("max_run", _positive_int("max_run", self.max_run, MAX_RUN_LIMIT))
        set_("volume_size", _positive_int("volume_size", self.volume_size, 16384))
        for name in ("job_name", "base_job_name"):
            value = getattr(self, name)
            if value is not None and not JOB_NAME_RE.match(value):
                raise BadInput(
                    name,
                    value,
                    "1-63 of a-z A-Z 0-9 and '-', starting and ending with a letter or digit",
                )
        if self.base_job_name and len(self.base_job_name) > 63 - JOB_NAME_SUFFIX_LEN:
            raise BadInput(
                "base_job_name",
                self.base_job_name,
                f"at most {63 - JOB_NAME_SUFFIX_LEN} characters (a date is appended)",
            )
        _s3_uri("output_path", self.output_path)
        _s3_uri("checkpoint_s3_uri", self.checkpoint_s3_uri)
        if self.keep_alive is not None:
            set_("keep_alive", _seconds("keep_alive", self.keep_alive, 0, KEEP_ALIVE_LIMIT))
        self._check_spot()
        self._check_network()
        for name in ("use_spot", "encrypt_inter_container_traffic", "network_isolation"):
            if not isinstance(getattr(self, name), bool):
                raise BadInput(name, getattr(self, name), "True or False")
        set_("notes", tuple(notes))
        for note in notes:
            warnings.warn(note, UserWarning, stacklevel=4)

    def _check_instance_type(self, notes: list[str]) -> None:
        value = self.instance_type
        if not isinstance(value, str) or not INSTANCE_TYPE_RE.match(value):
            raise BadInput(
                "instance_type",
                value,
                "a SageMaker training instance type starting with 'ml.', e.g. ml.c5.2xlarge",
            )
        known = known_instance_types()
        if known is not None and value not in known:
            close = difflib.get_close_matches(value, sorted(known), n=3)
            raise BadInput(
                "instance_type",
                value,
                "a SageMaker training instance type"
                + (f" (closest: {', '.join(close)})" if close else ""),
            )
        cpus = vcpus(value)
        if cpus is not None and self.ppn > cpus:
            notes.append(
                f"ppn {self.ppn} exceeds the {cpus} vCPUs of {value}: processes will share cores"
            )

    def _check_maps(self) -> None:
        set_ = functools.partial(object.__setattr__, self)
        hps = parse_pairs("hyperparameter", self.hyperparameters)
        for key in hps:
            if key.startswith("sagemaker_") or key == "model_dir":
                raise BadInput(
                    "hyperparameter",
                    key,
                    "a name not starting with 'sagemaker_' and not 'model_dir' "
                    "(reserved for the container)",
                )
            if not key or len(key) > 256:
                raise BadInput("hyperparameter", key, "a name of 1-256 characters")
        set_("hyperparameters", hps)
        env = parse_pairs("env", self.env)
        for key, value in env.items():
            if not ENV_KEY_RE.match(key) or len(key) > 512:
                raise BadInput("env", key, "a variable name matching [A-Za-z_][A-Za-z0-9_]*")
            if len(value) > 512:
                raise BadInput(f"env[{key}]", value[:40] + "...", "a value of at most 512 chars")
        if len(env) > 100:
            raise BadInput("env", len(env), "at most 100 variables")
        set_("env", env)
        tags = parse_pairs("tags", self.tags)
        for key, value in tags.items():
            if key.startswith("aws:") or not 1 <= len(key) <= 128 or not TAG_RE.match(key):
                raise BadInput(
                    "tags",
                    key,
                    "a tag key of 1-128 letters, digits, spaces and "
                    "_.:/=+-@, not starting with 'aws:'",
                )
            if len(value) > 256 or not TAG_RE.match(value):
                raise BadInput(
                    f"tags[{key}]",
                    value,
                    "a tag value of at most 256 letters, digits, spaces and _.:/=+-@",
                )
        set_("tags", tags)
        channels = parse_inputs(self.inputs)
        if self.network_isolation is True and "code" in channels:
            raise BadInput(
                "inputs",
                "code",
                "a channel name other than 'code' (network isolation uploads the code there)",
            )
        set_("inputs", channels)

    def _check_spot(self) -> None:
        if not isinstance(self.use_spot, bool):
            raise BadInput("use_spot", self.use_spot, "True or False")
        if self.max_wait is not None:
            wait = _positive_int("max_wait", self.max_wait, MAX_RUN_LIMIT)
            object.__setattr__(self, "max_wait", wait)
            if not self.use_spot:
                raise BadInput("max_wait", self.max_wait, "only with use_spot=True")
        if self.use_spot:
            if self.keep_alive:
                raise BadInput(
                    "keep_alive",
                    self.keep_alive,
                    "0 or None with use_spot=True (warm pools do not support spot training)",
                )
            if self.max_wait is None:
                object.__setattr__(self, "max_wait", self.max_run)
            elif self.max_wait < self.max_run:
                raise BadInput(
                    "max_wait",
                    self.max_wait,
                    f"seconds >= max_run ({self.max_run}) for spot training",
                )

    def _check_network(self) -> None:
        subnets = check_vpc_ids("subnets", self.subnets)
        groups = check_vpc_ids("security_groups", self.security_groups)
        # A VPC needs both; one may come from the config file (``smmpi infra deploy
        # --vpc-id``), so the pair is checked when settings are resolved.
        object.__setattr__(self, "subnets", subnets)
        object.__setattr__(self, "security_groups", groups)

    # -- derived values ------------------------------------------------------------------

    @property
    def hyperparameter_map(self) -> dict[str, str]:
        """User hyperparameters, normalised to strings (the form the CLI gives)."""
        return dict(self.hyperparameters or {})  # type: ignore[arg-type]

    @property
    def env_map(self) -> dict[str, str]:
        return dict(self.env or {})  # type: ignore[arg-type]

    @property
    def tag_map(self) -> dict[str, str]:
        return dict(self.tags or {})  # type: ignore[arg-type]

    @property
    def input_map(self) -> dict[str, str]:
        """Input channels, name -> URI (validated)."""
        return dict(self.inputs or {})  # type: ignore[arg-type]

    @property
    def world_size(self) -> int:
        return self.instances * self.ppn

    @property
    def mpi_argv(self) -> tuple[str, ...]:
        """The custom MPI options as argv (validated, split like the container splits them)."""
        return tuple(str(self.mpi_options).split())

    @property
    def distribution(self) -> dict[str, Any]:
        """The SDK's ``distribution`` argument: the block the SDK itself never checks."""
        return {
            "mpi": {
                "enabled": True,
                "processes_per_host": self.ppn,
                "custom_mpi_options": str(self.mpi_options),
            }
        }

    # -- the flow: plan, estimator, submit -------------------------------------------------

    def plan(self, *, job_name: str | None = None) -> Plan:
        """The CreateTrainingJob request and container mpirun argv, offline (no credentials)."""
        from smmpi.plan import plan

        return plan(self, job_name=job_name)

    def estimator(self, *, offline: bool = False, local: bool = False, **local_options: Any) -> Any:
        """The SDK estimator (TensorFlow or PyTorch) for this job; see smmpi.estimator.

        ``local=True``: the same estimator, whose ``fit`` runs the job here
        (``timeout``, ``log_dir``, ``keep`` go to the local run).
        """
        if local:
            from smmpi.local.sdk import local_estimator

            return local_estimator(self, job_name=self.job_name, **local_options)
        from smmpi.estimator import build

        return build(self, offline=offline).estimator

    @overload
    def submit(
        self,
        *,
        wait: bool = ...,
        echo: Callable[[str], None] | None = ...,
        local: Literal[False] = ...,
        stop_on_interrupt: bool = ...,
    ) -> Submission: ...

    @overload
    def submit(
        self,
        *,
        wait: bool = ...,
        echo: Callable[[str], None] | None = ...,
        local: Literal[True],
        **local_options: Any,
    ) -> LocalJob: ...

    def submit(
        self,
        *,
        wait: bool = True,
        echo: Callable[[str], None] | None = None,
        local: bool = False,
        stop_on_interrupt: bool = False,
        **local_options: Any,
    ) -> Submission | LocalJob:
        """Upload the source dir, create the training job, and optionally follow it.

        ``local=True`` runs the very request here instead (the SDK's ``fit``
        with its CreateTrainingJob answered by a local run) and returns the
        local job; ``timeout``, ``log_dir``, ``out``, ``err`` go to that run.
        Ctrl-C while waiting raises :class:`smmpi.submit.Interrupted` and
        leaves the job running, unless ``stop_on_interrupt``.
        """
        if local:
            from smmpi.local.sdk import submit_local

            return submit_local(self, job_name=self.job_name, **local_options)
        from smmpi.submit import submit

        return submit(self, wait=wait, echo=echo, stop_on_interrupt=stop_on_interrupt)

    def run_local(self, **local_options: Any) -> LocalJob:
        """Run here, Docker-free, at the same world size: ``submit(local=True)``."""
        return self.submit(local=True, **local_options)
