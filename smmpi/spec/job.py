"""MPIJob: the one place where a job's fields, defaults and checks live.

The SDK does not validate the ``mpi`` distribution block (a misspelt ``process_per_host`` is
dropped and the job runs one process per host), so every field is checked here, before any
AWS call or process start: a bad field raises :class:`~smmpi.errors.BadInput` naming the
field, the value and what is allowed; an unknown keyword lists the valid ones. Importing
this module is cheap: the SDK is imported only by the methods that build an estimator.
"""

from __future__ import annotations

import functools
import importlib
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, overload

from smmpi.aws.facts import (
    BUCKET_RE,
    BUCKET_RULE,
    KEEP_ALIVE_LIMIT,
    REGION_RE,
    REGION_RULE,
    ROLE_ARN_RE,
    ROLE_RULE,
)
from smmpi.catalog import Program, resolve
from smmpi.errors import BadInput
from smmpi.spec.checks import (
    check_api,
    check_job_names,
    check_pattern,
    check_vpc_ids,
    parse_inputs,
    parse_mpi_options,
    positive_int,
    s3_uri,
    seconds,
    strict_kwargs,
)
from smmpi.spec.instance_type import DEFAULT_INSTANCE_TYPE, check_instance_type, cores_note
from smmpi.spec.limits import check_limits, check_types, run_seconds
from smmpi.spec.metrics import check_metrics
from smmpi.spec.pairs import check_env, check_hyperparameters, check_tags
from smmpi.spec.shell import check_shell_words
from smmpi.spec.spot import check_spot
from smmpi.spec.versions import DEFAULT_FRAMEWORK, FRAMEWORKS, resolve_versions
from smmpi.spec.world import check_instances, check_ppn

if TYPE_CHECKING:
    from smmpi.runners.local.records import LocalJob
    from smmpi.runners.plan import Plan
    from smmpi.runners.sagemaker.submit import Submission

# One hour, not the SDK's 24: a hung MPI job burns money until max_run.
DEFAULT_MAX_RUN = 3600
DEFAULT_VOLUME_SIZE = 30


@strict_kwargs
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
    api: str = "estimator"
    as_sagemaker: bool = False  # model-trainer: the SDK driver's per-node -np, unchanged
    metric_definitions: Mapping[str, str] | Sequence[Any] | None = None
    program: Program = field(init=False, repr=False, compare=False)
    notes: tuple[str, ...] = field(init=False, repr=False, compare=False, default=())

    def __post_init__(self) -> None:
        check_types(vars(self))
        set_ = functools.partial(object.__setattr__, self)
        set_("instances", check_instances(self.instances))
        set_("ppn", check_ppn(self.ppn))
        note = cores_note(check_instance_type(self.instance_type), self.ppn)
        program = resolve(self.entry, self.source_dir)
        set_("program", program)
        self._check_framework(program)
        check_pattern("role", self.role, ROLE_ARN_RE, ROLE_RULE)
        check_pattern("bucket", self.bucket, BUCKET_RE, BUCKET_RULE)
        check_pattern("region", self.region, REGION_RE, REGION_RULE)
        set_("mpi_options", " ".join(parse_mpi_options(self.mpi_options)))
        self._check_maps()
        set_("metric_definitions", check_metrics(self.metric_definitions))
        check_limits(
            str(self.framework), self.hyperparameter_map, self.input_map, self.tag_map, self.env_map
        )
        if self.api != "model-trainer":  # the estimators' images run the toolkit's shell
            check_shell_words(str(self.framework), self.hyperparameter_map)
        set_("max_run", run_seconds("max_run", self.max_run))
        set_("volume_size", positive_int("volume_size", self.volume_size, 16384))
        check_job_names(self.job_name, self.base_job_name)
        check_api(self.api, self.job_name, self.as_sagemaker)
        s3_uri("output_path", self.output_path)
        s3_uri("checkpoint_s3_uri", self.checkpoint_s3_uri)
        if self.keep_alive is not None:
            set_("keep_alive", seconds("keep_alive", self.keep_alive, 0, KEEP_ALIVE_LIMIT))
        self._check_spot()
        self._check_network()
        for name in ("use_spot", "encrypt_inter_container_traffic", "network_isolation"):
            if not isinstance(getattr(self, name), bool):
                raise BadInput(name, getattr(self, name), "True or False")
        notes = (note,) if note else ()
        set_("notes", notes)
        for text in notes:
            warnings.warn(text, UserWarning, stacklevel=4)

    def _check_framework(self, program: Program) -> None:
        framework = self.framework
        if framework is None:  # not given ("" is given, and refused as any unknown name)
            framework = program.framework_hint or DEFAULT_FRAMEWORK
        if framework not in FRAMEWORKS:
            raise BadInput("framework", framework, " or ".join(FRAMEWORKS))
        version, py = resolve_versions(framework, self.framework_version, self.py_version)
        object.__setattr__(self, "framework", framework)
        object.__setattr__(self, "framework_version", version)
        object.__setattr__(self, "py_version", py)

    def _check_maps(self) -> None:
        set_ = functools.partial(object.__setattr__, self)
        set_("hyperparameters", check_hyperparameters(self.hyperparameters))
        set_("env", check_env(self.env))
        set_("tags", check_tags(self.tags))
        channels = parse_inputs(self.inputs)
        if self.network_isolation is True and "code" in channels:
            raise BadInput(
                "inputs",
                "code",
                "a channel name other than 'code' (network isolation uploads the code there)",
            )
        set_("inputs", channels)

    def _check_spot(self) -> None:
        wait = check_spot(self.use_spot, self.max_wait, self.keep_alive, self.max_run)
        object.__setattr__(self, "max_wait", wait)

    def _check_network(self) -> None:
        # A VPC needs both; one may come from the config file (``smmpi infra deploy
        # --vpc-id``), so the pair is checked when settings are resolved.
        for name in ("subnets", "security_groups"):
            object.__setattr__(self, name, check_vpc_ids(name, getattr(self, name)))

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

    # -- the flow: conveniences that delegate to smmpi.api -----------------------------------
    # The façade sits above the spec, so it is looked up by name when called: importing
    # the spec never imports what is built on it.

    def plan(self, *, job_name: str | None = None) -> Plan:
        """The CreateTrainingJob request and container mpirun argv, offline (no credentials)."""
        result: Plan = _api().plan(self, job_name=job_name)
        return result

    def estimator(self, *, offline: bool = False, local: bool = False, **local_options: Any) -> Any:
        """The SDK estimator (TensorFlow or PyTorch) for this job; see :func:`smmpi.api.estimator`.

        ``local=True``: the same estimator, whose ``fit`` runs the job here
        (``timeout``, ``log_dir``, ``keep`` go to the local run).
        """
        return _api().estimator(self, offline=offline, local=local, **local_options)

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
        Ctrl-C while waiting raises :class:`smmpi.runners.sagemaker.submit.Interrupted`
        and leaves the job running, unless ``stop_on_interrupt``. ``create_bucket=True``
        creates a named bucket that does not exist (by default it is refused).
        """
        api = _api()
        if local:
            local_job: LocalJob = api.run_local(self, **local_options)
            return local_job
        submission: Submission = api.submit(
            self, wait=wait, echo=echo, stop_on_interrupt=stop_on_interrupt, **local_options
        )
        return submission

    def run_local(self, **local_options: Any) -> LocalJob:
        """Run here, Docker-free, at the same world size: ``submit(local=True)``."""
        return self.submit(local=True, **local_options)


def _api() -> Any:
    """The façade (:mod:`smmpi.api`), resolved at call time."""
    return importlib.import_module("smmpi.api")


def require_s3_inputs(job: MPIJob) -> None:
    """Refuse ``file://`` channels for SageMaker: only a local run can read this machine."""
    for name, uri in job.input_map.items():
        if not uri.startswith("s3://"):
            raise BadInput(
                f"inputs.{name}", uri, "an s3://bucket/prefix URI (file:// works only with --local)"
            )
