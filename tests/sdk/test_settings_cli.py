"""Role, bucket, region and VPC from flags, SMMPI_* and the config file, through the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import (
    ROLE,
    MotoServer,
    make_bucket,
    run_checked,
    s3_state,
    training_jobs,
)

pytestmark = pytest.mark.aws


def test_settings_from_env_are_checked_and_required(
    moto_server: MotoServer, aws: dict[str, str]
) -> None:
    bad_env = run_checked(
        ["submit", "demo", "--instances", "2", "--ppn", "1"], {**aws, "SMMPI_ROLE": "not-an-arn"}
    )
    assert bad_env.returncode == 2 and "SMMPI_ROLE" in bad_env.stderr
    missing = run_checked(["submit", "demo", "--instances", "2", "--ppn", "1"], aws)
    assert missing.returncode == 2 and "invalid role" in missing.stderr
    assert training_jobs(moto_server) == [] and s3_state(moto_server) == {}


def test_settings_precedence_flag_env_file(moto_server: MotoServer, aws: dict[str, str]) -> None:
    """Role, bucket, region: flag over SMMPI_* over the config file (smmpi.config)."""
    Path(aws["SMMPI_CONFIG"]).write_text(
        json.dumps({"role": ROLE, "bucket": "from-file", "region": "us-west-2"})
    )
    for bucket in ("from-file", "from-env", "from-flag"):
        make_bucket(moto_server, bucket)
    base = ["submit", "demo", "--instances", "2", "--ppn", "1", "--no-wait", "--json"]
    from_file = json.loads(run_checked(base, aws).stdout)
    assert from_file["code_uri"].startswith("s3://from-file/")
    assert from_file["request"]["RoleArn"] == ROLE
    env = {**aws, "SMMPI_BUCKET": "from-env"}
    assert json.loads(run_checked(base, env).stdout)["code_uri"].startswith("s3://from-env/")
    flagged = json.loads(run_checked([*base, "--bucket", "from-flag"], env).stdout)
    assert flagged["code_uri"].startswith("s3://from-flag/")
    assert sorted(s3_state(moto_server)) == ["from-env", "from-file", "from-flag"]
    assert len(training_jobs(moto_server)) == 3


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
    make_bucket(moto_server, "from-file")
    base = ["submit", "demo", "--instances", "2", "--ppn", "1", "--no-wait", "--json"]
    saved = run_checked(base, aws)
    assert saved.returncode == 0, saved.stderr
    desc = sm.describe_training_job(TrainingJobName=json.loads(saved.stdout)["job_name"])
    assert desc["VpcConfig"] == {
        "SecurityGroupIds": ["sg-0123abcd"],
        "Subnets": ["subnet-0aaa", "subnet-0bbb"],
    }
    flagged = run_checked([*base, "--subnet", "subnet-0ccc"], aws)
    assert flagged.returncode == 0, flagged.stderr
    desc = sm.describe_training_job(TrainingJobName=json.loads(flagged.stdout)["job_name"])
    assert desc["VpcConfig"] == {"SecurityGroupIds": ["sg-0123abcd"], "Subnets": ["subnet-0ccc"]}
    both = run_checked(
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
    before = (training_jobs(moto_server), s3_state(moto_server))
    bad = run_checked(base, aws)
    assert bad.returncode == 2
    assert bad.stderr.startswith(f"smmpi: invalid subnets (from {aws['SMMPI_CONFIG']}): 'net-1'")
    assert (training_jobs(moto_server), s3_state(moto_server)) == before
