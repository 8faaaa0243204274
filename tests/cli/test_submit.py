"""`smmpi submit` bad input: one line, exit 2, nothing created."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import (
    ROLE,
    MotoServer,
    run_checked,
    s3_state,
    training_jobs,
)

pytestmark = pytest.mark.aws


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
    result = run_checked(["submit", *args, *([] if "--role" in args else ["--role", ROLE])], aws)
    assert result.returncode == 2, (result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"smmpi: invalid {field}"), lines
    assert result.stdout == ""
    assert training_jobs(moto_server) == []
    assert s3_state(moto_server) == {}


def test_bad_user_files_exit_2(
    moto_server: MotoServer, aws: dict[str, str], tmp_path: Path
) -> None:
    bad = tmp_path / "my train.py"
    bad.write_text("print(1)\n")
    for entry in (str(bad), str(tmp_path / "missing.py")):
        result = run_checked(
            ["submit", entry, "--instances", "2", "--ppn", "1", "--role", ROLE], aws
        )
        assert result.returncode == 2, result.stderr
        assert result.stderr.startswith("smmpi: invalid ENTRY")
    assert training_jobs(moto_server) == [] and s3_state(moto_server) == {}


def test_file_input_needs_local(
    moto_server: MotoServer, aws: dict[str, str], tmp_path: Path
) -> None:
    """A file:// channel: one line naming the channel, for a dry run and a submit alike."""
    for mode in (["--dry-run"], ["--no-wait"]):
        result = run_checked(
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
    assert training_jobs(moto_server) == [] and s3_state(moto_server) == {}
