"""`smmpi run --from-job`: a submitted job's request and uploaded code, run here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import MotoServer, make_bucket, smmpi

pytestmark = pytest.mark.aws


ROLE = "arn:aws:iam::123456789012:role/smmpi-test"


BUCKET = "smmpi-local-test"


def test_run_from_job_runs_the_uploaded_code(
    env: dict[str, str], moto_server: MotoServer, tmp_path: Path
) -> None:
    env.update(moto_server.aws_env())
    env["SMMPI_LOCAL_JOBS"] = str(tmp_path / "local-jobs")
    make_bucket(moto_server, BUCKET)
    name = "smmpi-from-job-test"
    r = smmpi(
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
            BUCKET,
            "--job-name",
            name,
            "--no-wait",
        ],
        env,
    )
    assert r.returncode == 0, r.stderr
    r = smmpi(["run", "--from-job", name], env)
    assert r.returncode == 0, r.stderr
    assert "demo: all 4 ranks verified their results" in r.stdout
    record = json.loads((tmp_path / "local-jobs" / name / "describe.json").read_text())
    assert record["TrainingJobStatus"] == "Completed"
    code = tmp_path / "local-jobs" / name / "hosts" / "algo-2" / "opt" / "ml" / "code"
    assert sorted(p.name for p in code.iterdir()) == [
        "broadcast.py",
        "demo.py",
        "gather_reduce_broadcast.py",
        "point_to_point.py",
        "smmpi_runtime.py",
    ]


@pytest.mark.parametrize(
    ("name", "field"), [("no-such-job", "--from-job"), ("bad_name!", "job name")]
)
def test_run_from_unknown_or_bad_job(
    env: dict[str, str], moto_server: MotoServer, tmp_path: Path, name: str, field: str
) -> None:
    env.update(moto_server.aws_env())
    env["SMMPI_LOCAL_JOBS"] = str(tmp_path / "local-jobs")
    r = smmpi(["run", "--from-job", name], env)
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and name in lines[0], r.stderr
    assert not (tmp_path / "local-jobs").exists()
