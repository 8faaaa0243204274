"""``smmpi run``: a program here as N emulated instances x n processes, or a submitted job."""

from __future__ import annotations

import dataclasses
import sys
from typing import Any

import click

from smmpi.cli.options import (
    local_run_options,
    pass_env_options,
    request_choice_options,
    shape_options,
)


@click.command("run", context_settings={"ignore_unknown_options": False})
@click.argument("entry", required=False)
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
@shape_options("Emulated instances (hosts algo-1..algo-N).", "Processes per instance.", False)
@local_run_options(
    "Seconds before every rank's stack is printed and the run is killed (exit 124).",
    "Write one log file per rank here (rank-R.log).",
    "With --from-job: pip-install the code's requirements.txt into the local job's folder.",
)
@click.option(
    "--source-dir",
    type=click.Path(),
    default=None,
    help="Folder to lay out as the code dir with a user script.",
)
@click.option(
    "--keep",
    is_flag=True,
    help="Keep the emulated hosts' /opt/ml trees (local jobs from --from-job always keep them).",
)
@click.option(
    "--from-job",
    "from_job",
    default=None,
    metavar="NAME",
    help="Run a submitted training job's request and uploaded code here instead.",
)
@click.option("--region", default=None, help="AWS region of --from-job's job.")
@click.option(
    "--instance-type",
    default=None,
    help="Instance type the ranks' SM_NUM_CPUS/SM_NUM_GPUS and image describe [ml.c5.2xlarge].",
)
@click.option(
    "--framework",
    default=None,
    help="Estimator the run stands for: tensorflow (default) or pytorch.",
)
@click.option("--framework-version", default=None, help="Framework version of the image.")
@click.option("--py-version", default=None, help="Python version of the image, e.g. py312.")
@click.option(
    "--keep-warm",
    "keep_warm",
    default=None,
    metavar="SECONDS",
    help="Keep this run's isolated instances SECONDS (0-3600) for the next run of the same "
    "shape, which reuses them; 0 ends every kept one (ENTRY may then be left out).",
)
@request_choice_options()
@pass_env_options()
def run_cmd(entry: str | None, args: tuple[str, ...], **options: Any) -> None:
    """Run ENTRY here as N emulated SageMaker instances x n processes (local mpirun).

    ENTRY is a packaged entry point (see `smmpi entry-points`) or a path to a
    .py file. Arguments after `--` go to the program.

    With --from-job NAME, fetch a submitted job's description and uploaded
    sourcedir.tar.gz (through AWS_ENDPOINT_URL if set) and run exactly that.
    """
    from smmpi import api
    from smmpi.errors import BadInput

    o = RunFlags(**options)
    if _keep_warm(o.keep_warm, entry is None and not args):
        return
    passed = {
        "pass_env": list(o.pass_env),
        "with_credentials": o.with_credentials,
        "exact": o.exact,
    }
    if o.from_job is not None:
        _only_with_from_job(entry, args, o.request_choices())
        sys.exit(
            _from_job(
                o.from_job,
                o.region,
                o.timeout,
                o.log_dir,
                o.install_requirements,
                passed,
                o.isolation,
            )
        )
    if entry is None:
        raise BadInput("ENTRY", "", "a packaged entry point name or a path to a .py file")
    result = api.run_entry(
        entry,
        args=list(args),
        instances=o.instances,
        ppn=o.ppn,
        source_dir=o.source_dir,
        keep=o.keep,
        timeout=o.timeout,
        log_dir=o.log_dir,
        isolation=o.isolation,
        instance_type=o.instance_type,
        framework=o.framework,
        framework_version=o.framework_version,
        py_version=o.py_version,
        hyperparameters=list(o.hyperparameters),
        env=list(o.env),
        mpi_options=o.mpi_options,
        metrics=list(o.metrics),
        **passed,
    )
    sys.exit(result.exit_code)


@dataclasses.dataclass(frozen=True)
class RunFlags:
    """``smmpi run``'s options, as click parses them."""

    instances: object
    ppn: object
    timeout: float | None
    isolation: str | None
    log_dir: str | None
    install_requirements: bool
    exact: bool
    source_dir: str | None
    keep: bool
    from_job: str | None
    region: str | None
    instance_type: str | None
    framework: str | None
    framework_version: str | None
    py_version: str | None
    mpi_options: str | None
    hyperparameters: tuple[str, ...]
    env: tuple[str, ...]
    metrics: tuple[str, ...]
    pass_env: tuple[str, ...]
    with_credentials: bool
    keep_warm: str | None

    def request_choices(self) -> dict[str, str | None]:
        """What a request decides: given with --from-job, each is refused."""
        return {
            "--instance-type": self.instance_type,
            "--framework": self.framework,
            "--framework-version": self.framework_version,
            "--py-version": self.py_version,
            "--mpi-options": self.mpi_options,
            "--hyperparameter": " ".join(self.hyperparameters) or None,
            "--env": " ".join(self.env) or None,
            "--metric": " ".join(self.metrics) or None,
        }


def _keep_warm(value: str | None, alone: bool) -> bool:
    """``--keep-warm`` (else ``$SMMPI_KEEP_WARM``), checked first; 0 ends the kept instances.
    True: nothing more to do."""
    import os

    from smmpi.instances.warm import lease

    if value is None:
        lease.requested()  # a bad value in the environment is refused before anything runs
        return False
    seconds = lease.seconds(value)
    if seconds:
        os.environ[lease.ENV] = str(seconds)  # read where the run makes its instances
        return False
    os.environ.pop(lease.ENV, None)
    for key in lease.end_all():
        what = "the kept SageMaker SDK" if key.startswith("sdk/") else "warm instances"
        click.echo(f"smmpi: {what} {key.removeprefix('sdk/')}: ended", err=True)
    return alone


def _only_with_from_job(
    entry: str | None, args: tuple[str, ...], chosen: dict[str, str | None]
) -> None:
    """A job's own code, image and world come from its description: nothing else may."""
    from smmpi.errors import BadInput

    if entry is not None or args:
        raise BadInput("ENTRY", entry or " ".join(args), "nothing with --from-job")
    for name, value in chosen.items():
        if value is not None:
            raise BadInput(name, value, "nothing with --from-job (its own)")


def _from_job(
    name: str,
    region: str | None,
    timeout: float | None,
    log_dir: str | None,
    install_requirements: bool,
    passed: dict[str, Any],
    isolation: str | None,
) -> int:
    """Run a submitted job's request and uploaded code here; returns the exit code."""
    from smmpi import api

    job = api.run_from_job(
        name,
        region=region,
        timeout=timeout,
        log_dir=log_dir,
        install_requirements=install_requirements,
        **passed,
        isolation=isolation,
    )
    return job.exit_code
