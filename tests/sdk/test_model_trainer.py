"""`submit --api model-trainer`: the request built by the SDK's ModelTrainer, and the mpirun
line its own MPI driver builds, offline, against golden files."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from smmpi.errors import BadInput
from smmpi.spec import MPIJob
from smmpi.toolkit.drivers.line import forwarded_credentials
from tests.helpers import ROLE, check_golden, smmpi

pytestmark = pytest.mark.usefixtures("no_aws_settings")


def _job(**more: object) -> MPIJob:
    fields: dict[str, object] = dict(
        instances=3, ppn=2, role=ROLE, bucket="smmpi-golden-bucket", region="us-west-2"
    )
    fields.update(more)
    return MPIJob("demo", api="model-trainer", **fields)  # type: ignore[arg-type]


@pytest.mark.parametrize("framework", ["tensorflow", "pytorch"])
def test_golden_model_trainer_demo_3x2(framework: str) -> None:
    plan = _job(framework=framework, hyperparameters={"epochs": "3"}).plan()
    check_golden(f"demo_3x2_{framework}.model_trainer.request.json", plan.request)
    check_golden(f"demo_3x2_{framework}.model_trainer.mpirun.json", plan.mpirun)
    spec = plan.request["AlgorithmSpecification"]
    assert spec["ContainerEntrypoint"] == ["/bin/bash"]
    assert "sm_drivers/sm_train.sh" in spec["ContainerArguments"][-1]
    estimator_image = (
        MPIJob("demo", instances=3, ppn=2, framework=framework, role=ROLE, region="us-west-2")
        .plan()
        .request["AlgorithmSpecification"]["TrainingImage"]
    )
    assert spec["TrainingImage"] == estimator_image
    assert plan.world_size == 6 and plan.placeholders == []
    assert "distributed_drivers/mpi_driver.py" in plan.channels["sm_drivers"]
    assert "distributed_drivers/mpi_utils.py" in plan.channels["sm_drivers"]
    assert plan.channels["code"] == sorted(plan.files)


def test_the_driver_builds_the_line_with_the_jobs_settings() -> None:
    plan = _job(
        instances=2,
        ppn=2,
        mpi_options="-x NCCL_DEBUG=WARN",
        hyperparameters={"lr": "0.1"},
        env={"OMP_NUM_THREADS": "1"},
    ).plan()
    line = plan.mpirun
    assert line[:5] == ["mpirun", "--host", "algo-1:2,algo-2:2", "-np", "2"]
    tail = line[line.index("-x", line.index("PATH")) :]  # the additional options come after -x PATH
    assert tail[:4] == ["-x", "NCCL_DEBUG=WARN", "-np", "4"]
    assert line[-5:] == ["-m", "mpi4py", "demo.py", "--lr", "0.1"]
    assert plan.forwarded == []  # smmpi refuses credentials in --env, so none reach the driver
    assert any("-np 4" in note for note in plan.notes)


def test_the_driver_forwards_credentials_it_finds(tmp_path: Path) -> None:
    """Run the driver itself with credentials in the container's environment."""
    from smmpi.toolkit.drivers.line import driver_mpirun

    plan = _job(instances=2, ppn=1).plan()
    request = dict(
        plan.request, Environment={"AWS_ACCESS_KEY_ID": "AKID", "AWS_SESSION_TOKEN": "t"}
    )
    drivers = tmp_path / "sm_drivers"
    import sagemaker.modules.train as train

    shutil.copytree(Path(train.__file__).parent / "container_drivers", drivers)
    (drivers / "sourcecode.json").write_text(json.dumps({"entry_script": "demo.py"}))
    (drivers / "distributed.json").write_text(
        json.dumps({"process_count_per_node": 1, "mpi_additional_options": []})
    )
    line = driver_mpirun(request, drivers)
    assert forwarded_credentials(line) == ["AWS_ACCESS_KEY_ID", "AWS_SESSION_TOKEN"]
    assert "AKID" not in line


def test_bad_api_and_names_are_refused() -> None:
    with pytest.raises(BadInput, match=r"api: 'sdk-v3'.*estimator or model-trainer"):
        MPIJob("demo", api="sdk-v3")
    with pytest.raises(BadInput, match=r"job_name.*base_job_name"):
        MPIJob("demo", api="model-trainer", job_name="fixed-name")


def test_cli_dry_run_json(env: dict[str, str], tmp_path: Path) -> None:
    done = smmpi(
        ["submit", "demo", "-N", "2", "-n", "2", "--api", "model-trainer", "--dry-run", "--json"],
        env,
    )
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["api"] == "model-trainer" and data["world_size"] == 4
    assert data["mpirun"][-4:] == ["/usr/local/bin/python3", "-m", "mpi4py", "demo.py"]
    assert "sm_train.sh" in data["channels"]["sm_drivers"]
    assert data["forwarded_credentials"] == []
    assert not list(tmp_path.glob("home/.smmpi/**/*.json"))


@pytest.mark.parametrize(
    ("instances", "teardown"),
    [
        ("2", "teardown     up to 30 s after your program ends (the workers of ModelTrainer's"),
        ("1", "teardown     none (ModelTrainer's MPI driver on one instance ends when mpirun"),
    ],
)
def test_cli_dry_run_says_the_drivers_teardown(
    env: dict[str, str], instances: str, teardown: str
) -> None:
    """No toolkit sleeps in a ModelTrainer job: its workers poll for algo-1's status file
    every 30 s (mpi_utils._wait_for_status_file), so the dry run says "up to", not ">=","""
    argv = ["submit", "demo", "-N", instances, "-n", "2", "--api", "model-trainer", "--dry-run"]
    done = smmpi(argv, env)
    assert done.returncode == 0, done.stderr
    assert teardown in done.stdout
    assert "toolkit's waits" not in done.stdout


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (["--api", "v3"], "smmpi: invalid api: 'v3'; allowed: estimator or model-trainer"),
        (["--api", "model-trainer", "--job-name", "x1", "--dry-run"], "job_name"),
    ],
)
def test_cli_bad_api_is_one_line(env: dict[str, str], argv: list[str], line: str) -> None:
    done = smmpi(["submit", "demo", "-N", "2", "-n", "2", *argv], env)
    assert done.returncode == 2, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert line in done.stderr
