"""`submit --dry-run`: the request, the mpirun lines and the cost, with no credentials."""

from __future__ import annotations

import json

import pytest

from tests.helpers import (
    DEMO_FILES,
    ROLE,
    MotoServer,
    run_checked,
    s3_state,
    training_jobs,
)

pytestmark = pytest.mark.aws


def test_dry_run_needs_no_credentials(env: dict[str, str], guard: dict[str, str]) -> None:
    clean = {**env, **guard}
    clean.pop("AWS_EC2_METADATA_DISABLED", None)
    result = run_checked(
        ["submit", "demo", "--instances", "3", "--ppn", "2", "--dry-run", "--json"], clean
    )
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
    human = run_checked(["submit", "demo", "--instances", "3", "--ppn", "2", "--dry-run"], clean)
    assert human.returncode == 0, human.stderr
    first = human.stdout.splitlines()
    assert first[0] == "smmpi submit --dry-run: nothing was created"
    assert any("= 6 ranks" in line for line in first[:8])
    assert "mpirun --host algo-1:2,algo-2:2,algo-3:2 -np 6" in human.stdout
    assert "CreateTrainingJob request:" in human.stdout


def test_dry_run_with_moto_settings_creates_nothing(
    moto_server: MotoServer, aws: dict[str, str]
) -> None:
    result = run_checked(
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
    assert training_jobs(moto_server) == [] and s3_state(moto_server) == {}


def test_dry_run_shows_cost_estimate(env: dict[str, str], guard: dict[str, str]) -> None:
    from smmpi import pricing

    clean = {**env, **guard}
    args = ["submit", "demo", "--instances", "3", "--ppn", "2", "--region", "us-west-2"]
    args += ["--max-run", "7200", "--dry-run"]
    est = pricing.estimate("ml.c5.2xlarge", 3, 7200, "us-west-2")
    assert est["price_per_hour"] is not None
    human = run_checked(args, clean)
    assert human.returncode == 0, human.stderr
    cost = [line for line in human.stdout.splitlines() if line.startswith("  cost ")]
    assert len(cost) == 1
    assert f"(estimate, on-demand prices as of {est['as_of']})" in cost[0]
    assert f"~${est['price_per_hour']:.2f}/h" in cost[0]
    assert f"at most ~${est['max_cost']:.2f}" in cost[0]
    assert "spot" not in human.stdout.split("mpirun on algo-1")[0]
    data = json.loads(run_checked([*args, "--json"], clean).stdout)
    assert data["cost"]["price_per_hour"] == est["price_per_hour"]
    assert data["cost"]["max_cost"] == est["max_cost"] == round(est["price_per_hour"] * 2, 2)
    assert data["cost"]["estimate"] is True and data["cost"]["spot"] is False
    spot = run_checked([*args, "--spot"], clean)
    assert spot.returncode == 0, spot.stderr
    assert (
        "  spot         spot is usually cheaper than on-demand; the ceiling shown is the "
        "on-demand one" in spot.stdout
    )
    spot_json = json.loads(run_checked([*args, "--spot", "--json"], clean).stdout)
    assert spot_json["cost"]["spot"] is True
    assert spot_json["request"]["EnableManagedSpotTraining"] is True


def test_dry_run_request_has_the_input_channel(env: dict[str, str], guard: dict[str, str]) -> None:
    result = run_checked(
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
