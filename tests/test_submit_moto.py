"""`smmpi submit` end to end: the real CLI as a subprocess against a moto server over HTTP.

Every CLI run here goes through a network guard (a ``sitecustomize`` on
PYTHONPATH) that refuses and records any connection or name lookup for a host
other than the loopback moto server, and every output is checked for the fake
credentials.
"""

from __future__ import annotations

import io
import json
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
    assert "Completed" in result.stderr
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
    assert lines[-1].endswith("Failed - Failed")


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
