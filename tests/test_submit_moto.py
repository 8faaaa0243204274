"""`smmpi submit` end to end: the real CLI as a subprocess against a moto server over HTTP.

Every CLI run here goes through a network guard (a ``sitecustomize`` on
PYTHONPATH) that refuses and records any connection or name lookup for a host
other than the loopback moto server, and every output is checked for the fake
credentials.
"""

from __future__ import annotations

import io
import json
import re
import subprocess
import tarfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import MotoServer, smmpi

ROLE = "arn:aws:iam::123456789012:role/x"
SECRETS = ("testing-secret-do-not-print", "testing-AKIDEXAMPLE")
DEMO_FILES = [
    "broadcast.py",
    "demo.py",
    "gather_reduce_broadcast.py",
    "point_to_point.py",
    "smmpi_runtime.py",
]

NETGUARD = '''
"""Test-only: refuse and record any network use except the loopback interface."""
import os
import socket

_LOG = os.environ["SMMPI_NETGUARD_LOG"]
_LOCAL = {"127.0.0.1", "::1", "localhost"}


def _refuse(what):
    with open(_LOG, "a") as f:
        f.write(what + "\\n")
    raise ConnectionRefusedError("netguard: refused " + what)


def _check(sock, address):
    if sock.family == getattr(socket, "AF_UNIX", None):
        return
    host = address[0] if isinstance(address, tuple) else str(address)
    if str(host) not in _LOCAL:
        _refuse(f"connect {host}")


_connect, _connect_ex, _getaddrinfo = (
    socket.socket.connect, socket.socket.connect_ex, socket.getaddrinfo)


def connect(self, address):
    _check(self, address)
    return _connect(self, address)


def connect_ex(self, address):
    _check(self, address)
    return _connect_ex(self, address)


def getaddrinfo(host, *args, **kwargs):
    if host is not None and str(host) not in _LOCAL:
        _refuse(f"lookup {host}")
    return _getaddrinfo(host, *args, **kwargs)


socket.socket.connect = connect
socket.socket.connect_ex = connect_ex
socket.getaddrinfo = getaddrinfo
'''


@pytest.fixture
def guard(tmp_path: Path) -> Iterator[dict[str, str]]:
    """Environment additions that install the network guard; fails the test on any hit."""
    site = tmp_path / "netguard"
    site.mkdir()
    (site / "sitecustomize.py").write_text(NETGUARD)
    log = tmp_path / "netguard.log"
    log.write_text("")
    yield {"PYTHONPATH": str(site), "SMMPI_NETGUARD_LOG": str(log)}
    hits = log.read_text().strip()
    assert not hits, f"connections outside the moto server:\n{hits}"


def test_guard_catches_outside_connections(guard: dict[str, str], env: dict[str, str]) -> None:
    """The guard itself works: a lookup of an AWS host is refused and recorded."""
    import sys

    code = (
        "import socket\n"
        "try:\n    socket.getaddrinfo('sts.amazonaws.com', 443)\nexcept OSError:\n    pass"
    )

    subprocess.run([sys.executable, "-c", code], env={**env, **guard}, check=True)
    log = Path(guard["SMMPI_NETGUARD_LOG"])
    assert "lookup sts.amazonaws.com" in log.read_text()
    log.write_text("")


def run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    result = smmpi(args, env)
    for secret in SECRETS:
        assert secret not in result.stdout and secret not in result.stderr
    return result


@pytest.fixture
def aws(moto_server: MotoServer, env: dict[str, str], guard: dict[str, str]) -> dict[str, str]:
    """CLI environment pointing at moto with fake credentials; IMDS not disabled (the guard is)."""
    out = {**env, **moto_server.aws_env(), **guard}
    out.pop("AWS_EC2_METADATA_DISABLED", None)
    return out


def jobs(moto: MotoServer) -> list[str]:
    client = moto.boto3_client("sagemaker")
    return [j["TrainingJobName"] for j in client.list_training_jobs()["TrainingJobSummaries"]]


def s3_state(moto: MotoServer) -> dict[str, list[str]]:
    s3 = moto.boto3_client("s3")
    return {
        b["Name"]: [o["Key"] for o in s3.list_objects_v2(Bucket=b["Name"]).get("Contents", [])]
        for b in s3.list_buckets()["Buckets"]
    }


def tar_members(moto: MotoServer, bucket: str, key: str) -> list[str]:
    body = moto.boto3_client("s3").get_object(Bucket=bucket, Key=key)["Body"].read()
    with tarfile.open(fileobj=io.BytesIO(body), mode="r:gz") as tar:
        return sorted(tar.getnames())


def test_submit_demo_3x2_waits_until_completed(
    moto_server: MotoServer, aws: dict[str, str]
) -> None:
    moto_server.boto3_client("s3").create_bucket(
        Bucket="smmpi-test", CreateBucketConfiguration={"LocationConstraint": "us-west-2"}
    )
    result = run(
        [
            "submit",
            "demo",
            "--instances",
            "3",
            "--ppn",
            "2",
            "--role",
            ROLE,
            "--bucket",
            "smmpi-test",
        ],
        aws,
    )
    assert result.returncode == 0, result.stderr
    name = result.stdout.strip().splitlines()[-1]
    assert name.startswith("smmpi-demo-")
    # --wait reports each status with the time since the job was created.
    assert re.search(r"^smmpi: \[\d\d:\d\d\] Completed$", result.stderr, re.M), result.stderr
    assert "INFO" not in result.stderr and "Warning" not in result.stderr  # SDK chatter is off
    assert jobs(moto_server) == [name]
    client = moto_server.boto3_client("sagemaker")
    desc = client.describe_training_job(TrainingJobName=name)
    assert desc["TrainingJobStatus"] == "Completed"
    assert desc["ResourceConfig"]["InstanceCount"] == 3
    assert desc["ResourceConfig"]["InstanceType"] == "ml.c5.2xlarge"
    hp = desc["HyperParameters"]
    assert hp["sagemaker_mpi_enabled"] == "true"
    assert hp["sagemaker_mpi_num_of_processes_per_host"] == "2"
    assert hp["sagemaker_mpi_custom_mpi_options"] == '""'
    assert hp["sagemaker_program"] == '"demo.py"'
    key = f"{name}/source/sourcedir.tar.gz"
    assert hp["sagemaker_submit_directory"] == f'"s3://smmpi-test/{key}"'
    assert desc["AlgorithmSpecification"]["TrainingImage"] == (
        "763104351884.dkr.ecr.us-west-2.amazonaws.com/tensorflow-training:2.19.0-cpu-py312"
    )
    assert desc["RoleArn"] == ROLE
    tags = client.list_tags(ResourceArn=desc["TrainingJobArn"])["Tags"]
    assert {"Key": "smmpi:managed", "Value": "true"} in tags
    assert s3_state(moto_server) == {"smmpi-test": [key]}
    assert tar_members(moto_server, "smmpi-test", key) == DEMO_FILES


def test_submit_names_and_creates_default_bucket_no_wait_json(
    moto_server: MotoServer, aws: dict[str, str]
) -> None:
    result = run(
        [
            "submit",
            "demo",
            "--instances",
            "3",
            "--ppn",
            "2",
            "--role",
            ROLE,
            "--framework",
            "pytorch",
            "--no-wait",
            "--json",
            "--hyperparameter",
            "epochs=2",
            "--env",
            "FOO=bar",
        ],
        aws,
    )
    assert result.returncode == 0, result.stderr
    out: dict[str, Any] = json.loads(result.stdout)
    name = out["job_name"]
    bucket = "sagemaker-us-west-2-123456789012"
    assert out["arn"].endswith(f"training-job/{name}")
    assert out["request"]["ResourceConfig"]["InstanceCount"] == 3
    state = s3_state(moto_server)
    assert state == {bucket: [f"{name}/source/sourcedir.tar.gz"]}
    desc = moto_server.boto3_client("sagemaker").describe_training_job(TrainingJobName=name)
    assert "/pytorch-training:2.8.0-cpu-py312" in desc["AlgorithmSpecification"]["TrainingImage"]
    assert desc["HyperParameters"]["epochs"] == '"2"'
    assert out["request"]["Environment"] == {"FOO": "bar"}  # moto does not echo it back


def test_no_wait_prints_the_job_name(moto_server: MotoServer, aws: dict[str, str]) -> None:
    env = {**aws, "SMMPI_ROLE": ROLE}
    result = run(
        [
            "submit",
            "demo",
            "--instances",
            "2",
            "--ppn",
            "1",
            "--no-wait",
            "--job-name",
            "my-mpi-job",
        ],
        env,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "my-mpi-job"
    assert jobs(moto_server) == ["my-mpi-job"]


BAD_INPUTS: list[tuple[list[str], str]] = [
    (["demo", "--instances", "0", "--ppn", "2"], "instances"),
    (["demo", "--instances", "-1", "--ppn", "2"], "instances"),
    (["demo", "--instances", "two", "--ppn", "2"], "instances"),
    (["demo", "--instances", "3", "--ppn", "0"], "ppn"),
    (["demo", "--instances", "3", "--ppn", "1.5"], "ppn"),
    (["demo", "--instances", "3", "--ppn", "2", "--instance-type", "c5.2xlarge"], "instance_type"),
    (
        ["demo", "--instances", "3", "--ppn", "2", "--instance-type", "ml.c5.3xlarge"],
        "instance_type",
    ),
    (["no_such_entry", "--instances", "3", "--ppn", "2"], "ENTRY"),
    (["/nonexistent/train.py", "--instances", "3", "--ppn", "2"], "ENTRY"),
    (["demo", "--instances", "3", "--ppn", "2", "--role", "my-role"], "role"),
    (["demo", "--instances", "3", "--ppn", "2", "--framework", "mxnet"], "framework"),
    (["demo", "--instances", "3", "--ppn", "2", "--framework-version", "1.0"], "framework_version"),
    (["demo", "--instances", "3", "--ppn", "2", "--py-version", "py27"], "py_version"),
    (["demo", "--instances", "3", "--ppn", "2", "--job-name", "bad_name"], "job_name"),
    (
        ["demo", "--instances", "3", "--ppn", "2", "--mpi-options", "-x A=1 | tee /tmp/x"],
        "mpi_options",
    ),
    (["demo", "--instances", "3", "--ppn", "2", "--mpi-options", "-x A=`id`"], "mpi_options"),
    (["demo", "--instances", "3", "--ppn", "2", "--hyperparameter", "epochs"], "hyperparameter"),
    (["demo", "--instances", "3", "--ppn", "2", "--env", "FOO"], "env"),
    (["demo", "--instances", "3", "--ppn", "2", "--max-run", "0"], "max_run"),
    (["demo", "--instances", "3", "--ppn", "2", "--bucket", "Bad_Bucket"], "bucket"),
    (["demo", "--instances", "3", "--ppn", "2", "--region", "mars"], "region"),
    (["demo", "--instances", "3", "--ppn", "2", "--spot", "--max-wait", "10"], "max_wait"),
    (["demo", "--instances", "3", "--ppn", "2", "--spot", "--max-wait", "soon"], "max_wait"),
    (["demo", "--instances", "3", "--ppn", "2", "--max-wait", "7200"], "max_wait"),
    (
        ["demo", "--instances", "3", "--ppn", "2", "--checkpoint-s3-uri", "bkt/ckpt"],
        "checkpoint_s3_uri",
    ),
    (["demo", "--instances", "3", "--ppn", "2", "--keep-alive", "3601"], "keep_alive"),
    (["demo", "--instances", "3", "--ppn", "2", "--keep-alive", "-5"], "keep_alive"),
    (["demo", "--instances", "3", "--ppn", "2", "--keep-alive", "600", "--spot"], "keep_alive"),
    (["demo", "--instances", "3", "--ppn", "2", "--input", "bad/name=s3://bkt/x"], "inputs"),
    (["demo", "--instances", "3", "--ppn", "2", "--input", "x" * 65 + "=s3://bkt/x"], "inputs"),
    (["demo", "--instances", "3", "--ppn", "2", "--input", "train"], "inputs"),
    (["demo", "--instances", "3", "--ppn", "2", "--input", "train=file:///tmp"], "inputs.train"),
    (["demo", "--instances", "3", "--ppn", "2", "--input", "train=bkt/data"], "inputs.train"),
    (["demo", "--instances", "3", "--ppn", "2", "--subnet", "subnet-0abc"], "security_groups"),
    (
        [
            "demo",
            "--instances",
            "3",
            "--ppn",
            "2",
            "--subnet",
            "subnet-0abc",
            "--security-group",
            "group-1",
        ],
        "security_groups",
    ),
    (["demo", "--instances", "3", "--ppn", "2", "--stop-on-interrupt", "--no-wait"], "--stop"),
]


@pytest.mark.parametrize(("args", "field"), BAD_INPUTS, ids=[f for _, f in BAD_INPUTS])
def test_bad_input_exits_2_and_creates_nothing(
    moto_server: MotoServer, aws: dict[str, str], args: list[str], field: str
) -> None:
    result = run(["submit", *args, *([] if "--role" in args else ["--role", ROLE])], aws)
    assert result.returncode == 2, (result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"smmpi: invalid {field}"), lines
    assert result.stdout == ""
    assert jobs(moto_server) == []
    assert s3_state(moto_server) == {}


def test_bad_user_files_exit_2(
    moto_server: MotoServer, aws: dict[str, str], tmp_path: Path
) -> None:
    bad = tmp_path / "my train.py"
    bad.write_text("print(1)\n")
    for entry in (str(bad), str(tmp_path / "missing.py")):
        result = run(["submit", entry, "--instances", "2", "--ppn", "1", "--role", ROLE], aws)
        assert result.returncode == 2, result.stderr
        assert result.stderr.startswith("smmpi: invalid ENTRY")
    assert jobs(moto_server) == [] and s3_state(moto_server) == {}


def test_settings_from_env_are_checked_and_required(
    moto_server: MotoServer, aws: dict[str, str]
) -> None:
    bad_env = run(
        ["submit", "demo", "--instances", "2", "--ppn", "1"], {**aws, "SMMPI_ROLE": "not-an-arn"}
    )
    assert bad_env.returncode == 2 and "SMMPI_ROLE" in bad_env.stderr
    missing = run(["submit", "demo", "--instances", "2", "--ppn", "1"], aws)
    assert missing.returncode == 2 and "invalid role" in missing.stderr
    assert jobs(moto_server) == [] and s3_state(moto_server) == {}


def test_ppn_above_vcpus_warns_and_submits(moto_server: MotoServer, aws: dict[str, str]) -> None:
    result = run(
        ["submit", "demo", "--instances", "1", "--ppn", "16", "--role", ROLE, "--no-wait"], aws
    )
    assert result.returncode == 0, result.stderr
    assert "warning: ppn 16 exceeds the 8 vCPUs" in result.stderr
    assert len(jobs(moto_server)) == 1


def test_local_runs_here_and_creates_nothing_remote(
    moto_server: MotoServer, aws: dict[str, str]
) -> None:
    result = run(["submit", "demo", "--instances", "2", "--ppn", "1", "--local"], aws)
    assert result.returncode == 0, result.stderr
    assert "demo: all 2 ranks verified their results" in result.stdout
    assert "Completed" in result.stderr
    assert jobs(moto_server) == [] and s3_state(moto_server) == {}


def test_dry_run_needs_no_credentials(env: dict[str, str], guard: dict[str, str]) -> None:
    clean = {**env, **guard}
    clean.pop("AWS_EC2_METADATA_DISABLED", None)
    result = run(["submit", "demo", "--instances", "3", "--ppn", "2", "--dry-run", "--json"], clean)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""  # no SDK banner, config chatter or telemetry notice
    out = json.loads(result.stdout)
    assert {"request", "mpirun", "world_size"} <= set(out)
    assert out["world_size"] == 6
    assert out["request"]["RoleArn"] == "<role: set --role or SMMPI_ROLE>"
    assert out["request"]["OutputDataConfig"]["S3OutputPath"].startswith(
        "s3://<bucket: set --bucket or SMMPI_BUCKET>"
    )
    assert out["mpirun"][:5] == ["mpirun", "--host", "algo-1:2,algo-2:2,algo-3:2", "-np", "6"]
    assert out["files"] == DEMO_FILES
    human = run(["submit", "demo", "--instances", "3", "--ppn", "2", "--dry-run"], clean)
    assert human.returncode == 0, human.stderr
    first = human.stdout.splitlines()
    assert first[0] == "smmpi submit --dry-run: nothing was created"
    assert any("= 6 ranks" in line for line in first[:8])
    assert "mpirun --host algo-1:2,algo-2:2,algo-3:2 -np 6" in human.stdout
    assert "CreateTrainingJob request:" in human.stdout


def test_dry_run_with_moto_settings_creates_nothing(
    moto_server: MotoServer, aws: dict[str, str]
) -> None:
    result = run(
        [
            "submit",
            "demo",
            "--instances",
            "3",
            "--ppn",
            "2",
            "--dry-run",
            "--json",
            "--role",
            ROLE,
            "--bucket",
            "smmpi-test",
        ],
        aws,
    )
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["request"]["RoleArn"] == ROLE and out["placeholders"] == []
    assert jobs(moto_server) == [] and s3_state(moto_server) == {}


class _FakeClient:
    """DescribeTrainingJob answers in sequence (moto's jobs always complete)."""

    def __init__(self, answers: list[dict[str, Any]]) -> None:
        self.answers = answers

    def describe_training_job(self, TrainingJobName: str) -> dict[str, Any]:
        return self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]


def test_follow_reports_transitions_and_failure_reason() -> None:
    from smmpi.submit import Submission, follow

    client = _FakeClient(
        [
            {"TrainingJobStatus": "InProgress", "SecondaryStatus": "Starting"},
            {"TrainingJobStatus": "InProgress", "SecondaryStatus": "Starting"},
            {"TrainingJobStatus": "InProgress", "SecondaryStatus": "Training"},
            {
                "TrainingJobStatus": "Failed",
                "SecondaryStatus": "Failed",
                "FailureReason": "AlgorithmError: MPI_ABORT was invoked on rank 3",
            },
        ]
    )
    lines: list[str] = []
    sub = Submission(job_name="j", arn="", request={}, code_uri="", region="us-west-2")
    follow(client, sub, lines.append, poll=0.01)
    assert [t["secondary_status"] for t in sub.transitions] == ["Starting", "Training", "Failed"]
    assert sub.status == "Failed" and sub.exit_code == 1
    assert "MPI_ABORT" in (sub.failure_reason or "")
    # No SecondaryStatusTransitions (other endpoints): the statuses, timed by the local clock.
    assert lines == ["smmpi: [00:00] Starting", "smmpi: [00:00] Training", "smmpi: [00:00] Failed"]
    stopped = _FakeClient(
        [{"TrainingJobStatus": "Stopped", "SecondaryStatus": "MaxRuntimeExceeded"}]
    )
    lines.clear()
    follow(stopped, sub, lines.append, poll=0.01)
    assert lines == ["smmpi: [00:00] Stopped - MaxRuntimeExceeded"] and sub.exit_code == 1


class _FakeLog:
    """A JobLog stand-in: one batch of lines per poll, the rest on the final one."""

    def __init__(self) -> None:
        self.polls: list[bool] = []

    def poll(self, final: bool = False) -> list[Any]:
        from smmpi.jobs import LogLine

        self.polls.append(final)
        text = "done" if final else f"step {len(self.polls)}"
        return [LogLine("algo-1", 0, "stdout", text)]


def test_follow_streams_the_log_until_the_end() -> None:
    from smmpi.submit import Submission, follow

    client = _FakeClient(
        [
            {"TrainingJobStatus": "InProgress", "SecondaryStatus": "Training"},
            {"TrainingJobStatus": "InProgress", "SecondaryStatus": "Training"},
            {"TrainingJobStatus": "Completed", "SecondaryStatus": "Completed"},
        ]
    )
    log, printed = _FakeLog(), []
    sub = Submission(job_name="j", arn="", request={}, code_uri="", region="us-west-2")
    follow(client, sub, lambda _: None, poll=0.01, log=log, on_log=printed.append)
    assert sub.exit_code == 0
    assert log.polls == [False, False, True]
    assert printed == ["[0] step 1", "[0] step 2", "[0] done"]


def test_settings_precedence_flag_env_file(moto_server: MotoServer, aws: dict[str, str]) -> None:
    """Role, bucket, region: flag over SMMPI_* over the config file (smmpi.config)."""
    Path(aws["SMMPI_CONFIG"]).write_text(
        json.dumps({"role": ROLE, "bucket": "from-file", "region": "us-west-2"})
    )
    base = ["submit", "demo", "--instances", "2", "--ppn", "1", "--no-wait", "--json"]
    from_file = json.loads(run(base, aws).stdout)
    assert from_file["code_uri"].startswith("s3://from-file/")
    assert from_file["request"]["RoleArn"] == ROLE
    env = {**aws, "SMMPI_BUCKET": "from-env"}
    assert json.loads(run(base, env).stdout)["code_uri"].startswith("s3://from-env/")
    flagged = json.loads(run([*base, "--bucket", "from-flag"], env).stdout)
    assert flagged["code_uri"].startswith("s3://from-flag/")
    assert sorted(s3_state(moto_server)) == ["from-env", "from-file", "from-flag"]
    assert len(jobs(moto_server)) == 3


def test_user_script_with_source_dir(
    moto_server: MotoServer, aws: dict[str, str], tmp_path: Path
) -> None:
    src = tmp_path / "proj"
    for rel in (
        "train.py",
        "lib/util.py",
        ".git/HEAD",
        "__pycache__/train.cpython-311.pyc",
        ".venv/pyvenv.cfg",
    ):
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        (src / rel).write_text("x = 1\n")
    result = run(
        [
            "submit",
            str(src / "train.py"),
            "--source-dir",
            str(src),
            "--instances",
            "2",
            "--ppn",
            "2",
            "--role",
            ROLE,
            "--bucket",
            "user-code",
            "--no-wait",
            "--json",
        ],
        aws,
    )
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["job_name"].startswith("smmpi-train-")
    key = out["code_uri"].removeprefix("s3://user-code/")
    assert tar_members(moto_server, "user-code", key) == [
        "lib/util.py",
        "smmpi_runtime.py",
        "train.py",
    ]
    hp = out["request"]["HyperParameters"]
    assert hp["sagemaker_program"] == '"train.py"'


def test_file_input_needs_local(
    moto_server: MotoServer, aws: dict[str, str], tmp_path: Path
) -> None:
    """A file:// channel: one line naming the channel, for a dry run and a submit alike."""
    for mode in (["--dry-run"], ["--no-wait"]):
        result = run(
            [
                "submit",
                "demo",
                "--instances",
                "2",
                "--ppn",
                "1",
                "--role",
                ROLE,
                *mode,
                "--input",
                f"train=file://{tmp_path}",
            ],
            aws,
        )
        assert result.returncode == 2, result.stderr
        assert result.stderr.splitlines() == [
            f"smmpi: invalid inputs.train: 'file://{tmp_path}'; allowed: an s3://bucket/prefix "
            "URI (file:// works only with --local)"
        ]
        assert result.stdout == ""
    assert jobs(moto_server) == [] and s3_state(moto_server) == {}


def test_input_channels_spot_and_checkpoint_reach_sagemaker(
    moto_server: MotoServer, aws: dict[str, str]
) -> None:
    result = run(
        [
            "submit",
            "demo",
            "--instances",
            "2",
            "--ppn",
            "2",
            "--role",
            ROLE,
            "--bucket",
            "bkt",
            "--input",
            "train=s3://bkt/data/train",
            "--input",
            "val=s3://bkt/data/val",
            "--spot",
            "--max-run",
            "1800",
            "--max-wait",
            "7200",
            "--checkpoint-s3-uri",
            "s3://bkt/ckpt",
            "--no-wait",
            "--json",
        ],
        aws,
    )
    assert result.returncode == 0, result.stderr
    name = json.loads(result.stdout)["job_name"]
    desc = moto_server.boto3_client("sagemaker").describe_training_job(TrainingJobName=name)
    channels = {
        c["ChannelName"]: c["DataSource"]["S3DataSource"]["S3Uri"] for c in desc["InputDataConfig"]
    }
    assert channels == {"train": "s3://bkt/data/train", "val": "s3://bkt/data/val"}
    assert desc["EnableManagedSpotTraining"] is True
    assert desc["StoppingCondition"] == {
        "MaxRuntimeInSeconds": 1800,
        "MaxWaitTimeInSeconds": 7200,
    }
    assert desc["CheckpointConfig"] == {"S3Uri": "s3://bkt/ckpt"}
    assert s3_state(moto_server) == {"bkt": [f"{name}/source/sourcedir.tar.gz"]}


def test_keep_alive_reaches_the_request(moto_server: MotoServer, aws: dict[str, str]) -> None:
    result = run(
        [
            "submit",
            "demo",
            "--instances",
            "2",
            "--ppn",
            "1",
            "--role",
            ROLE,
            "--keep-alive",
            "600",
            "--no-wait",
            "--json",
        ],
        aws,
    )
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["request"]["ResourceConfig"]["KeepAlivePeriodInSeconds"] == 600
    desc = moto_server.boto3_client("sagemaker").describe_training_job(
        TrainingJobName=out["job_name"]
    )
    assert desc["ResourceConfig"]["KeepAlivePeriodInSeconds"] == 600


def test_vpc_from_config_file_and_flags(moto_server: MotoServer, aws: dict[str, str]) -> None:
    """`infra deploy --vpc-id` saves the VPC; submit uses it, a flag replaces its own kind."""
    Path(aws["SMMPI_CONFIG"]).write_text(
        json.dumps(
            {
                "role": ROLE,
                "bucket": "from-file",
                "region": "us-west-2",
                "security_group_ids": ["sg-0123abcd"],
                "subnets": ["subnet-0aaa", "subnet-0bbb"],
            }
        )
    )
    sm = moto_server.boto3_client("sagemaker")
    base = ["submit", "demo", "--instances", "2", "--ppn", "1", "--no-wait", "--json"]
    saved = run(base, aws)
    assert saved.returncode == 0, saved.stderr
    desc = sm.describe_training_job(TrainingJobName=json.loads(saved.stdout)["job_name"])
    assert desc["VpcConfig"] == {
        "SecurityGroupIds": ["sg-0123abcd"],
        "Subnets": ["subnet-0aaa", "subnet-0bbb"],
    }
    flagged = run([*base, "--subnet", "subnet-0ccc"], aws)
    assert flagged.returncode == 0, flagged.stderr
    desc = sm.describe_training_job(TrainingJobName=json.loads(flagged.stdout)["job_name"])
    assert desc["VpcConfig"] == {"SecurityGroupIds": ["sg-0123abcd"], "Subnets": ["subnet-0ccc"]}
    both = run(
        [
            "submit",
            "demo",
            "--instances",
            "2",
            "--ppn",
            "1",
            "--dry-run",
            "--subnet",
            "subnet-0ddd",
            "--security-group",
            "sg-0eee",
        ],
        aws,
    )
    assert both.returncode == 0, both.stderr
    assert "  vpc          subnets subnet-0ddd; security groups sg-0eee" in both.stdout
    # A broken saved value names the file it came from and creates nothing.
    Path(aws["SMMPI_CONFIG"]).write_text(
        json.dumps({"role": ROLE, "region": "us-west-2", "subnets": ["net-1"]})
    )
    before = (jobs(moto_server), s3_state(moto_server))
    bad = run(base, aws)
    assert bad.returncode == 2
    assert bad.stderr.startswith(f"smmpi: invalid subnets (from {aws['SMMPI_CONFIG']}): 'net-1'")
    assert (jobs(moto_server), s3_state(moto_server)) == before


def test_dry_run_shows_cost_estimate(env: dict[str, str], guard: dict[str, str]) -> None:
    from smmpi import pricing

    clean = {**env, **guard}
    args = ["submit", "demo", "--instances", "3", "--ppn", "2", "--region", "us-west-2"]
    args += ["--max-run", "7200", "--dry-run"]
    est = pricing.estimate("ml.c5.2xlarge", 3, 7200, "us-west-2")
    assert est["price_per_hour"] is not None
    human = run(args, clean)
    assert human.returncode == 0, human.stderr
    cost = [line for line in human.stdout.splitlines() if line.startswith("  cost ")]
    assert len(cost) == 1
    assert f"(estimate, on-demand prices as of {est['as_of']})" in cost[0]
    assert f"~${est['price_per_hour']:.2f}/h" in cost[0]
    assert f"at most ~${est['max_cost']:.2f}" in cost[0]
    assert "spot" not in human.stdout.split("mpirun on algo-1")[0]
    data = json.loads(run([*args, "--json"], clean).stdout)
    assert data["cost"]["price_per_hour"] == est["price_per_hour"]
    assert data["cost"]["max_cost"] == est["max_cost"] == round(est["price_per_hour"] * 2, 2)
    assert data["cost"]["estimate"] is True and data["cost"]["spot"] is False
    spot = run([*args, "--spot"], clean)
    assert spot.returncode == 0, spot.stderr
    assert (
        "  spot         spot is usually cheaper than on-demand; the ceiling shown is the "
        "on-demand one" in spot.stdout
    )
    spot_json = json.loads(run([*args, "--spot", "--json"], clean).stdout)
    assert spot_json["cost"]["spot"] is True
    assert spot_json["request"]["EnableManagedSpotTraining"] is True


def test_dry_run_request_has_the_input_channel(env: dict[str, str], guard: dict[str, str]) -> None:
    result = run(
        [
            "submit",
            "demo",
            "--instances",
            "2",
            "--ppn",
            "1",
            "--dry-run",
            "--json",
            "--input",
            "train=s3://bkt/data",
        ],
        {**env, **guard},
    )
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["request"]["InputDataConfig"] == [
        {
            "ChannelName": "train",
            "DataSource": {
                "S3DataSource": {
                    "S3DataDistributionType": "FullyReplicated",
                    "S3DataType": "S3Prefix",
                    "S3Uri": "s3://bkt/data",
                }
            },
        }
    ]
    assert "SM_CHANNEL_TRAIN" in out["mpirun"]


GATHER_CHANNELS = """\
import json
import os

from mpi4py import MPI

comm = MPI.COMM_WORLD
mine = {
    "rank": comm.Get_rank(),
    "host": os.environ["SM_CURRENT_HOST"],
    "dir": os.environ["SM_CHANNEL_TRAIN"],
    "files": sorted(os.listdir(os.environ["SM_CHANNEL_TRAIN"])),
}
everyone = comm.gather(mine, root=0)
if comm.Get_rank() == 0:
    print("CHANNELS " + json.dumps(everyone))
"""


def test_local_file_channel_on_every_host(
    moto_server: MotoServer, aws: dict[str, str], tmp_path: Path
) -> None:
    """`--local --input train=file:///DIR`: each emulated host's SM_CHANNEL_TRAIN holds them."""
    data = tmp_path / "data"
    (data / "sub").mkdir(parents=True)
    (data / "a.txt").write_text("a\n")
    (data / "b.csv").write_text("1,2\n")
    (data / "sub" / "c.txt").write_text("c\n")
    script = tmp_path / "src" / "gather_channels.py"
    script.parent.mkdir()
    script.write_text(GATHER_CHANNELS)
    result = run(
        [
            "submit",
            str(script),
            "--instances",
            "2",
            "--ppn",
            "1",
            "--local",
            "--input",
            f"train=file://{data}",
        ],
        aws,
    )
    assert result.returncode == 0, result.stderr
    line = next(ln for ln in result.stdout.splitlines() if "CHANNELS " in ln)
    ranks = json.loads(line.split("CHANNELS ", 1)[1])
    assert [(r["rank"], r["host"]) for r in ranks] == [(0, "algo-1"), (1, "algo-2")]
    for r in ranks:
        assert r["files"] == ["a.txt", "b.csv", "sub"]
        assert r["dir"].endswith(f"/{r['host']}/opt/ml/input/data/train")
    assert ranks[0]["dir"] != ranks[1]["dir"]  # each host has its own copy
    assert jobs(moto_server) == [] and s3_state(moto_server) == {}


def test_follow_reports_secondary_transitions_with_elapsed_time() -> None:
    """SageMaker's SecondaryStatusTransitions, one line per new status or message."""
    from datetime import datetime, timedelta, timezone

    from smmpi.submit import Submission, follow

    t0 = datetime(2026, 1, 1, tzinfo=timezone.utc)

    def at(s: int) -> datetime:
        return t0 + timedelta(seconds=s)

    starting = {"Status": "Starting", "StartTime": at(0), "StatusMessage": "Launching instances"}
    downloading = {
        "Status": "Downloading",
        "StartTime": at(42),
        "StatusMessage": "Downloading input data",
    }
    training = {
        "Status": "Training",
        "StartTime": at(95),
        "StatusMessage": "Downloading the training image",
    }
    training2 = {
        **training,
        "StatusMessage": "Training image download completed. Training in progress.",
    }
    uploading = {"Status": "Uploading", "StartTime": at(3700), "StatusMessage": "Uploading output"}
    completed = {"Status": "Completed", "StartTime": at(3710), "StatusMessage": "Job completed"}

    def answer(status: str, *transitions: dict[str, Any], **extra: Any) -> dict[str, Any]:
        return {
            "TrainingJobStatus": status,
            "SecondaryStatus": transitions[-1]["Status"],
            "CreationTime": t0,
            "SecondaryStatusTransitions": list(transitions),
            **extra,
        }

    client = _FakeClient(
        [
            answer("InProgress", starting),
            answer("InProgress", starting),
            # two transitions between polls: each keeps its own time
            answer("InProgress", starting, downloading, training),
            answer("InProgress", starting, downloading, training2, LastModifiedTime=at(130)),
            answer(
                "Completed",
                starting,
                downloading,
                training2,
                uploading,
                completed,
                TrainingEndTime=at(3710),
            ),
        ]
    )
    lines: list[str] = []
    sub = Submission(job_name="j", arn="", request={}, code_uri="", region="us-west-2")
    follow(client, sub, lines.append, poll=0.01)
    assert lines == [
        "smmpi: [00:00] Starting - Launching instances",
        "smmpi: [00:42] Downloading - Downloading input data",
        "smmpi: [01:35] Training - Downloading the training image",
        "smmpi: [02:10] Training - Training image download completed. Training in progress.",
        "smmpi: [1:01:40] Uploading - Uploading output",
        "smmpi: [1:01:50] Completed - Job completed",
    ]
    assert sub.status == "Completed" and sub.exit_code == 0
    assert [t["elapsed_s"] for t in sub.transitions] == [0, 42, 95, 130, 3700, 3710]


class _InterruptedClient(_FakeClient):
    """Answers, then Ctrl-C during the next DescribeTrainingJob; records StopTrainingJob."""

    def __init__(self, answers: list[dict[str, Any]], interrupt_after: int) -> None:
        super().__init__(answers)
        self.calls = 0
        self.interrupt_after = interrupt_after
        self.stopped: list[str] = []

    def describe_training_job(self, TrainingJobName: str) -> dict[str, Any]:
        self.calls += 1
        if self.calls == self.interrupt_after + 1:
            raise KeyboardInterrupt
        return {
            "TrainingJobName": TrainingJobName,
            **super().describe_training_job(TrainingJobName),
        }

    def stop_training_job(self, TrainingJobName: str) -> dict[str, Any]:
        self.stopped.append(TrainingJobName)
        return {}


@pytest.mark.parametrize("stop", [False, True])
def test_ctrl_c_while_following(stop: bool) -> None:
    """Ctrl-C leaves the job running and says how to stop it, or stops it when asked; exit 130."""
    from smmpi.submit import Interrupted, Submission, follow

    client = _InterruptedClient(
        [{"TrainingJobStatus": "InProgress", "SecondaryStatus": "Training"}], interrupt_after=2
    )
    lines: list[str] = []
    sub = Submission(job_name="my-job", arn="", request={}, code_uri="", region="us-west-2")
    with pytest.raises(Interrupted) as info:
        follow(client, sub, lines.append, poll=0.01, stop_on_interrupt=stop)
    assert info.value.exit_code == 130
    message = str(info.value)
    assert lines == ["smmpi: [00:00] Training"]
    if stop:
        assert client.stopped == ["my-job"]
        assert "my-job: stop requested (was InProgress)" in message
    else:
        assert client.stopped == []
        assert "keeps running" in message and "`smmpi stop my-job`" in message
