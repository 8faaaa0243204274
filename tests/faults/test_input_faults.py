"""Bad input, injected: every case is one line naming the field, exit 2, and nothing created.

The real CLI runs as a subprocess against a moto server over HTTP. After each
case the server is checked for buckets, objects and jobs, the local-jobs
folder for job folders, and stdout for anything but JSON (``--json``).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.helpers import BIN, MotoServer, smmpi

ROLE = "arn:aws:iam::123456789012:role/x"

pytestmark = pytest.mark.aws


def refused(done: subprocess.CompletedProcess[str], *needles: str) -> str:
    """Exit 2 with exactly one ``smmpi:`` line on stderr that contains every needle."""
    assert "Traceback" not in done.stderr, done.stderr
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert len(lines) == 1 and lines[0].startswith("smmpi: "), lines
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


def nothing_created(moto: MotoServer, env: dict[str, str]) -> None:
    s3 = moto.boto3_client("s3")
    assert s3.list_buckets()["Buckets"] == []
    jobs = moto.boto3_client("sagemaker").list_training_jobs()["TrainingJobSummaries"]
    assert jobs == []
    local = Path(env["HOME"]) / ".smmpi" / "local-jobs"
    assert not local.exists() or list(local.iterdir()) == []


@pytest.fixture
def aws(moto_server: MotoServer, env: dict[str, str]) -> dict[str, str]:
    return {**env, **moto_server.aws_env()}


# ---------------------------------------------------------------- regions


@pytest.mark.parametrize("mode", [["--no-wait"], ["--dry-run", "--json"], ["--local", "--json"]])
def test_a_region_the_sdk_does_not_know_is_refused(
    mode: list[str], moto_server: MotoServer, aws: dict[str, str]
) -> None:
    args = ["submit", "demo", "-N", "1", "-n", "2", "--role", ROLE, "--region", "xx-fake-9"]
    done = smmpi([*args, *mode], aws)
    refused(done, "region", "xx-fake-9")
    assert done.stdout == ""
    nothing_created(moto_server, aws)


@pytest.mark.parametrize(
    "command",
    [["status", "somejob"], ["jobs"], ["fetch", "somejob"], ["stop", "somejob"], ["doctor"]],
)
def test_a_malformed_region_is_one_line(
    command: list[str], moto_server: MotoServer, aws: dict[str, str]
) -> None:
    args = [*command, "--no-smoke"] if command == ["doctor"] else command
    refused(smmpi([*args, "--region", "a/b"], aws), "region", "a/b")


def test_a_malformed_region_from_the_environment_is_one_line(
    moto_server: MotoServer, aws: dict[str, str]
) -> None:
    refused(smmpi(["status", "somejob"], {**aws, "AWS_REGION": "a/b"}), "region", "a/b")
    done = smmpi(
        ["submit", "demo", "-N", "1", "-n", "2", "--role", ROLE, "--no-wait"],
        {**aws, "SMMPI_REGION": "a/b"},
    )
    refused(done, "region", "a/b")
    nothing_created(moto_server, aws)


# ---------------------------------------------------------------- the config file

BROKEN_CONFIGS = {
    "bad-json": b"{not json",
    "a-list": b'["role", "bucket"]',
    "not-utf8": b'{"role": "\xff\xfe"}',
    "bucket-a-number": b'{"bucket": 12}',
}


@pytest.mark.parametrize("content", BROKEN_CONFIGS.values(), ids=BROKEN_CONFIGS.keys())
@pytest.mark.parametrize(
    "command",
    [
        ["submit", "demo", "-N", "1", "-n", "2", "--no-wait"],
        ["submit", "demo", "-N", "1", "-n", "2", "--dry-run", "--json"],
        ["status", "somejob"],
        ["doctor", "--no-smoke"],
    ],
    ids=["submit", "dry-run", "status", "doctor"],
)
def test_a_broken_config_file_is_one_line(
    command: list[str], content: bytes, moto_server: MotoServer, aws: dict[str, str]
) -> None:
    Path(aws["SMMPI_CONFIG"]).write_bytes(content)
    done = smmpi(command, aws)
    refused(done, aws["SMMPI_CONFIG"])
    assert done.stdout == ""
    nothing_created(moto_server, aws)


# ---------------------------------------------------------------- SageMaker's limits


def _submit(aws: dict[str, str], *extra: str) -> subprocess.CompletedProcess[str]:
    base = ["submit", "demo", "-N", "1", "-n", "2", "--role", ROLE, "--no-wait", "--json"]
    return smmpi([*base, *extra], aws)


def test_a_hyperparameter_value_over_2500_characters_is_refused_before_upload(
    moto_server: MotoServer, aws: dict[str, str]
) -> None:
    done = _submit(aws, "--hyperparameter", "note=" + "x" * 2600)
    refused(done, "hyperparameter", "note", "2500")
    assert done.stdout == ""
    nothing_created(moto_server, aws)


def test_the_longest_hyperparameter_value_sagemaker_takes_is_accepted(
    moto_server: MotoServer, aws: dict[str, str]
) -> None:
    """The SDK sends values JSON-quoted: 2498 characters become 2500 on the wire."""
    done = _submit(aws, "--hyperparameter", "note=" + "x" * 2498)
    assert done.returncode == 0, done.stderr
    sent = json.loads(done.stdout)["request"]["HyperParameters"]["note"]
    assert len(sent) == 2500


def test_more_hyperparameters_than_sagemaker_takes_are_refused(
    moto_server: MotoServer, aws: dict[str, str]
) -> None:
    pairs = [arg for i in range(100) for arg in ("--hyperparameter", f"h{i}=1")]
    done = _submit(aws, *pairs)
    refused(done, "hyperparameters", "100")
    nothing_created(moto_server, aws)


def test_more_than_20_channels_are_refused(moto_server: MotoServer, aws: dict[str, str]) -> None:
    inputs = [arg for i in range(21) for arg in ("--input", f"c{i}=s3://bkt/data/{i}")]
    refused(_submit(aws, *inputs), "inputs", "20")
    nothing_created(moto_server, aws)


def test_the_same_channel_twice_is_refused(moto_server: MotoServer, aws: dict[str, str]) -> None:
    done = _submit(aws, "--input", "train=s3://bkt/a", "--input", "train=s3://bkt/b")
    refused(done, "inputs", "train")
    nothing_created(moto_server, aws)


def test_more_than_50_tags_are_refused() -> None:
    from smmpi import MPIJob
    from smmpi.errors import BadInput

    with pytest.raises(BadInput, match=r"tags.*50"):
        MPIJob("demo", tags={f"k{i}": "v" for i in range(50)})  # + smmpi's own tag = 51


# ---------------------------------------------------------------- the Python API


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"entry": 123}, "entry"),
        ({"entry": "demo", "mpi_options": 123}, "mpi_options"),
        ({"entry": "demo", "role": 123}, "role"),
        ({"entry": "demo", "bucket": ["b"]}, "bucket"),
        ({"entry": "demo", "region": 5}, "region"),
        ({"entry": "demo", "source_dir": 5}, "source_dir"),
        ({"entry": "demo", "job_name": 5}, "job_name"),
        ({"entry": "demo", "hyperparameters": 5}, "hyperparameter"),
        ({"entry": "demo", "framework": 5}, "framework"),
    ],
)
def test_python_api_fields_of_the_wrong_type_are_bad_input(
    kwargs: dict[str, object], field: str
) -> None:
    from smmpi import MPIJob
    from smmpi.errors import BadInput

    with pytest.raises(BadInput) as caught:
        MPIJob(**kwargs)  # type: ignore[arg-type]
    assert caught.value.field.startswith(field), caught.value


# ---------------------------------------------------------------- files and folders


def test_an_unwritable_log_dir_is_one_line(env: dict[str, str], tmp_path: Path) -> None:
    afile = tmp_path / "a-file"
    afile.write_text("")
    done = smmpi(["run", "demo", "-N", "1", "-n", "2", "--log-dir", str(afile / "logs")], env)
    refused(done, "log", str(afile / "logs"))
    done = smmpi(
        ["submit", "demo", "-N", "1", "-n", "2", "--local", "--log-dir", str(afile / "logs")], env
    )
    refused(done, "log", str(afile / "logs"))
    local = Path(env["HOME"]) / ".smmpi" / "local-jobs"
    assert not local.exists() or list(local.iterdir()) == []


def _without_dac(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Run the CLI without root's power to read any file (as a user would be)."""
    return subprocess.run(
        ["setpriv", "--bounding-set", "-dac_override,-dac_read_search", str(BIN / "smmpi"), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize("mode", [["--dry-run"], ["--local"]])
def test_an_unreadable_file_in_the_source_dir_is_one_line(
    mode: list[str], env: dict[str, str], tmp_path: Path
) -> None:
    code = tmp_path / "code"
    code.mkdir()
    (code / "train.py").write_text("print('hi')\n")
    secret = code / "secret.txt"
    secret.write_text("x")
    secret.chmod(0)
    done = _without_dac(
        ["submit", str(code / "train.py"), "-N", "1", "-n", "2", "--source-dir", str(code), *mode],
        env,
    )
    refused(done, "secret.txt")
    local = Path(env["HOME"]) / ".smmpi" / "local-jobs"
    assert not local.exists() or list(local.iterdir()) == []


def test_home_unset_still_runs(env: dict[str, str]) -> None:
    """Open MPI refuses to start without HOME; smmpi gives it the user's home from passwd."""
    del env["HOME"]
    done = smmpi(["run", "demo", "-N", "1", "-n", "2"], env)
    assert done.returncode == 0, done.stderr
    assert "all 2 ranks verified" in done.stdout
