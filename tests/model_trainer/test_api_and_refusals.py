"""``MPIJob(api="model-trainer").run_local()``, and what a ModelTrainer run refuses in one line."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest

from smmpi.errors import BadInput
from smmpi.runners.local import exact
from smmpi.spec import MPIJob
from tests.helpers import base_env, processes_left, smmpi, write
from tests.model_trainer.test_local_driver import WORLD


def test_mpijob_run_local_runs_the_drivers_start(tmp_path: Path, in_process: Path) -> None:
    program = write(tmp_path / "world.py", WORLD)
    out, lines = io.StringIO(), list[str]()
    job = MPIJob(str(program), instances=2, ppn=1, api="model-trainer")
    done = job.run_local(out=out, err=out, progress=lines.append)
    assert done.exit_code == 0, "\n".join(lines)
    assert sorted(ln.split(">:", 1)[1] for ln in out.getvalue().splitlines() if ">:rank" in ln) == [
        "rank 0 of 2 on algo-1",
        "rank 1 of 2 on algo-2",
    ]
    assert done.record["AlgorithmSpecification"]["ContainerEntrypoint"] == ["/bin/bash"]
    assert done.model_artifact.is_file()
    assert processes_left(str(tmp_path)) == []


def _refused(tmp_path: Path, *args: str, **env: str) -> str:
    program = write(tmp_path / "world.py", WORLD)
    environ = {**base_env(tmp_path), **env}
    argv = ["submit", str(program), "-N", "2", "-n", "2", "--api", "model-trainer", *args]
    done = smmpi(argv, environ)
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    assert not (tmp_path / "home" / ".smmpi" / "local-jobs").exists()  # no job folder
    return done.stderr.strip()


def test_processes_mode_is_refused_in_one_line(tmp_path: Path) -> None:
    expected = (
        "smmpi: invalid isolation: 'processes'; allowed: auto or hosts (a ModelTrainer "
        "request runs its sshd)"
    )
    assert _refused(tmp_path, "--local", "--isolation", "processes") == expected
    assert _refused(tmp_path, "--local", SMMPI_ISOLATION="processes") == expected


def test_serve_takes_a_request_with_its_own_start_and_its_code_in_a_channel() -> None:
    from smmpi.serve.platform import OWN_START, unsupported
    from smmpi.toolkit.driver_world import REMOTE_FUNCTION

    image = "763104351884.dkr.ecr.us-west-2.amazonaws.com/pytorch-training:2.3.0-cpu-py311"
    algo: dict[str, Any] = {"TrainingImage": image, "TrainingInputMode": "File"}
    request: dict[str, Any] = {
        "AlgorithmSpecification": algo,
        "ResourceConfig": {"InstanceCount": 2, "InstanceType": "ml.c5.2xlarge"},
    }
    assert unsupported(request) == (
        "ClientError: sagemaker_submit_directory must name an s3:// sourcedir.tar.gz"
    )
    algo["ContainerEntrypoint"] = ["/bin/bash"]
    assert unsupported(request) == OWN_START
    request["InputDataConfig"] = [_channel("code"), _channel("sm_drivers")]
    assert unsupported(request) is None
    request["InputDataConfig"] = [_channel(REMOTE_FUNCTION)]  # @remote's job script
    assert unsupported(request) is None


def _channel(name: str) -> dict[str, Any]:
    uri = f"s3://bucket/job/{name}"
    source = {"S3Uri": uri, "S3DataType": "S3Prefix", "S3DataDistributionType": "FullyReplicated"}
    return {"ChannelName": name, "DataSource": {"S3DataSource": source}}


def test_as_sagemaker_is_refused_without_model_trainer(tmp_path: Path) -> None:
    """The estimators' container starts all N x n ranks: ``--as-sagemaker`` belongs to
    ModelTrainer's driver only, and is refused in one line before anything runs."""
    program = write(tmp_path / "world.py", WORLD)
    argv = ["submit", str(program), "-N", "2", "-n", "2", "--as-sagemaker", "--local"]
    done = smmpi(argv, base_env(tmp_path))
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    assert done.stderr.strip() == (
        "smmpi: invalid as_sagemaker: True; allowed: only with api model-trainer (the "
        "estimators' container starts all N x n ranks)"
    )
    assert not (tmp_path / "home" / ".smmpi" / "local-jobs").exists()  # no job folder
    with pytest.raises(BadInput, match=r"invalid as_sagemaker: 'yes'; allowed: True or False"):
        MPIJob(str(program), instances=2, ppn=2, api="model-trainer", as_sagemaker="yes")  # type: ignore[arg-type]


def test_this_machines_checks_are_made_once_for_a_local_model_trainer_job(
    tmp_path: Path, in_process: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[int] = []
    real = exact.unavailable_reason

    def counted(instances: int = 1) -> str | None:
        asked.append(instances)
        return real(instances)

    monkeypatch.setattr(exact, "unavailable_reason", counted)  # (the check of sshd's needs)
    program = write(tmp_path / "world.py", WORLD)
    out, lines = io.StringIO(), list[str]()
    job = MPIJob(str(program), instances=1, ppn=1, api="model-trainer")
    done = job.run_local(out=out, err=out, progress=lines.append)
    assert done.exit_code == 0, "\n".join(lines)
    assert asked == [1]  # before the SDK built the request, and not again on the route
