"""Settings, AWS variables, regions, inputs and ranks: one line, exit 2, before any work.

The real CLI runs as a subprocess against a moto server over HTTP. Each case
is one line naming the setting or field (never a credential's value), exit 2,
and nothing created: no bucket, object, job, local-job folder or rank.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.faults.test_input_faults import nothing_created, refused
from tests.helpers import BIN, ROLE, MotoServer, smmpi
from tests.ops.jobs import create_job

pytestmark = pytest.mark.aws

JOB = "somejob"
TOKEN = "FQoGZXIvYXdzEJr-session-token-do-not-print"
#: Commands that read a submitted job, as the user types them.
JOB_COMMANDS = [
    ["status", JOB],
    ["logs", JOB],
    ["stop", JOB],
    ["fetch", JOB],
    ["jobs"],
    ["infra", "show"],
    ["run", "--from-job", JOB],
]
IDS = ["status", "logs", "stop", "fetch", "jobs", "infra-show", "run-from-job"]
SUBMIT = ["submit", "demo", "-N", "1", "-n", "2", "--role", ROLE, "--bucket", "b-b-b", "--no-wait"]


@pytest.fixture
def aws(moto_server: MotoServer, env: dict[str, str]) -> dict[str, str]:
    return {**env, **moto_server.aws_env()}


# ---------------------------------------------------------------- smmpi's own settings

SETTINGS = {
    "keep-negative": ("SMMPI_LOCAL_JOBS_KEEP", "-1"),
    "keep-word": ("SMMPI_LOCAL_JOBS_KEEP", "many"),
    "keep-arabic-digits": ("SMMPI_LOCAL_JOBS_KEEP", "\u0663"),
    "isolation": ("SMMPI_ISOLATION", "containers"),
    "mpirun": ("SMMPI_MPIRUN", "/nonexistent/mpirun"),
    "role": ("SMMPI_ROLE", "not-an-arn"),
    "bucket": ("SMMPI_BUCKET", "Not_A_Bucket"),
    "region": ("SMMPI_REGION", "xx-fake-9"),
    "gpus-words": ("SMMPI_GPUS", "0, the big one"),
    "gpus-twice": ("SMMPI_GPUS", "0,1,0"),
}


@pytest.mark.parametrize(("var", "value"), SETTINGS.values(), ids=SETTINGS.keys())
@pytest.mark.parametrize(
    "command",
    [["submit", "demo", "-N", "2", "-n", "2", "--local"], ["run", "demo", "-N", "2", "-n", "2"]],
    ids=["submit-local", "run"],
)
def test_a_bad_setting_is_refused_before_the_job_runs(
    command: list[str], var: str, value: str, moto_server: MotoServer, aws: dict[str, str]
) -> None:
    done = smmpi(command, {**aws, var: value})
    refused(done, var, value)
    assert done.stdout == ""  # no rank ran
    nothing_created(moto_server, aws)


def test_a_local_jobs_setting_that_is_a_file_is_refused(
    tmp_path: Path, moto_server: MotoServer, aws: dict[str, str]
) -> None:
    plain = tmp_path / "a-file"
    plain.write_text("not a folder\n")
    done = smmpi(
        ["submit", "demo", "-N", "1", "-n", "2", "--local"], {**aws, "SMMPI_LOCAL_JOBS": str(plain)}
    )
    refused(done, "SMMPI_LOCAL_JOBS")
    assert plain.read_text() == "not a folder\n"


def test_the_python_api_checks_settings_before_running(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from smmpi import MPIJob
    from smmpi.errors import BadInput

    monkeypatch.setenv("SMMPI_LOCAL_JOBS", str(tmp_path / "jobs"))
    monkeypatch.setenv("SMMPI_LOCAL_JOBS_KEEP", "-1")
    with pytest.raises(BadInput, match="SMMPI_LOCAL_JOBS_KEEP"):
        MPIJob(entry="demo", instances=1, ppn=2).run_local()
    assert not (tmp_path / "jobs").exists()


# ---------------------------------------------------------------- regions


@pytest.mark.parametrize("command", JOB_COMMANDS, ids=IDS)
def test_a_region_botocore_does_not_know_is_refused_in_every_command(
    command: list[str], tmp_path: Path, moto_server: MotoServer, aws: dict[str, str]
) -> None:
    line = refused(smmpi([*command, "--region", "xx-fake-9"], aws, cwd=tmp_path), "xx-fake-9")
    assert line.startswith("smmpi: invalid region"), line
    config = Path(aws["SMMPI_CONFIG"])
    config.write_text(json.dumps({"region": "xx-fake-9"}))
    no_region = {k: v for k, v in aws.items() if k not in ("AWS_REGION", "AWS_DEFAULT_REGION")}
    refused(smmpi(command, no_region, cwd=tmp_path), "region", "xx-fake-9", str(config))
    config.unlink()
    fake = {**aws, "AWS_REGION": "xx-fake-9"}
    refused(smmpi(command, fake, cwd=tmp_path), "region", "xx-fake-9", "AWS_REGION")
    nothing_created(moto_server, aws)


# ---------------------------------------------------------------- AWS's own variables

BAD_AWS = {
    "endpoint-words": ("AWS_ENDPOINT_URL", "not a url"),
    "endpoint-file": ("AWS_ENDPOINT_URL", "file:///etc/passwd"),
    "endpoint-bracket": ("AWS_ENDPOINT_URL", "http://[::1"),
    "endpoint-port": ("AWS_ENDPOINT_URL", "http://127.0.0.1:99999"),
    "endpoint-s3": ("AWS_ENDPOINT_URL_S3", "ftp://example"),
    "profile": ("AWS_PROFILE", "missing"),
    "config-device": ("AWS_CONFIG_FILE", "/dev/zero"),
    "credentials-device": ("AWS_SHARED_CREDENTIALS_FILE", "/dev/zero"),
    "config-folder": ("AWS_CONFIG_FILE", "/"),
}


@pytest.mark.parametrize(("var", "value"), BAD_AWS.values(), ids=BAD_AWS.keys())
@pytest.mark.parametrize(
    "command",
    [
        ["status", JOB],
        ["submit", "demo", "-N", "1", "-n", "2", "--role", ROLE, "--no-wait"],
        ["submit", "demo", "-N", "1", "-n", "2", "--dry-run", "--json"],
    ],
    ids=["status", "submit", "dry-run"],
)
def test_a_bad_aws_variable_is_one_line_naming_it(
    command: list[str], var: str, value: str, moto_server: MotoServer, aws: dict[str, str]
) -> None:
    done = smmpi(command, {**aws, var: value})
    refused(done, var)
    assert done.stdout == ""
    nothing_created(moto_server, aws)


def test_a_fifo_as_the_aws_config_file_does_not_hang(
    tmp_path: Path, moto_server: MotoServer, aws: dict[str, str]
) -> None:
    fifo = tmp_path / "config-fifo"
    os.mkfifo(fifo)
    refused(smmpi(["status", JOB], {**aws, "AWS_CONFIG_FILE": str(fifo)}, timeout=30), str(fifo))


@pytest.mark.parametrize("var", ["AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE"])
@pytest.mark.parametrize("content", [b"no section\n[open", b"\xff\xfe[default]\n"])
def test_an_aws_file_botocore_cannot_parse_is_one_line_naming_it(
    var: str, content: bytes, tmp_path: Path, moto_server: MotoServer, aws: dict[str, str]
) -> None:
    broken = tmp_path / "broken.ini"
    broken.write_bytes(content)
    refused(smmpi(["status", JOB], {**aws, var: str(broken)}), var, str(broken))


@pytest.mark.parametrize("command", [*JOB_COMMANDS, SUBMIT], ids=[*IDS, "submit"])
@pytest.mark.parametrize("tail", ["\r\nX-Injected: 1", "\n", "\x1b[2J"], ids=["crlf", "lf", "esc"])
def test_a_session_token_with_a_line_break_is_one_line_without_it(
    command: list[str], tail: str, tmp_path: Path, moto_server: MotoServer, aws: dict[str, str]
) -> None:
    done = smmpi(command, {**aws, "AWS_SESSION_TOKEN": TOKEN + tail}, cwd=tmp_path)
    refused(done, "AWS_SESSION_TOKEN")
    assert TOKEN not in done.stdout + done.stderr


# ---------------------------------------------------------------- inputs, ranks


def test_an_input_in_a_bucket_that_does_not_exist_is_refused(
    moto_server: MotoServer, aws: dict[str, str]
) -> None:
    s3 = moto_server.boto3_client("s3")
    s3.create_bucket(
        Bucket="jobs-bucket", CreateBucketConfiguration={"LocationConstraint": "us-west-2"}
    )
    args = ["submit", "demo", "-N", "1", "-n", "2", "--role", ROLE, "--bucket", "jobs-bucket"]
    done = smmpi([*args, "--input", "train=s3://missing-bucket/x", "--no-wait"], aws)
    refused(done, "train", "s3://missing-bucket/x", "missing-bucket")
    assert s3.list_objects_v2(Bucket="jobs-bucket").get("KeyCount") == 0
    sm = moto_server.boto3_client("sagemaker")
    assert sm.list_training_jobs()["TrainingJobSummaries"] == []


@pytest.mark.parametrize("rank", ["6", "99999999999999999999"])
def test_logs_rank_is_bounded_by_the_jobs_world(
    rank: str, moto_server: MotoServer, aws: dict[str, str]
) -> None:
    create_job(moto_server, JOB, count=3, ppn=2)  # 6 ranks: 0 to 5
    line = refused(smmpi(["logs", JOB, "--rank", rank], aws), "rank", rank)
    assert "0 to 5" in line, line
    done = smmpi(["logs", JOB, "--rank", "5"], aws)
    assert done.returncode == 0, done.stderr


# ---------------------------------------------------------------- noise


def test_a_bare_smmpi_prints_its_help_and_exits_0(env: dict[str, str]) -> None:
    done = smmpi([], env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("Usage: smmpi") and "Commands:" in done.stdout
    assert done.stderr == ""


@pytest.mark.parametrize("stdin", ["closed", "empty"])
def test_infra_delete_without_a_terminal_asks_for_yes(
    stdin: str, moto_server: MotoServer, aws: dict[str, str]
) -> None:
    assert smmpi(["infra", "deploy"], aws).returncode == 0
    cmd = [str(BIN / "smmpi"), "infra", "delete"]
    if stdin == "closed":
        cmd = ["sh", "-c", '"$0" "$@" <&-', *cmd]
    done = subprocess.run(
        cmd, env=aws, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60
    )
    refused(done, "--yes")
    assert done.stdout == ""
    stacks = moto_server.boto3_client("cloudformation").describe_stacks()["Stacks"]
    assert [s["StackStatus"] for s in stacks] == ["CREATE_COMPLETE"]
