"""Warm pools under serve: WarmPoolStatus as SageMaker shows it, through the real clients."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import DEMO_FILES, ROOT, base_env
from tests.instances.hosts.keepers import gone, keepers
from tests.serve.serving import (
    ServeProcess,
    demo_source,
    dry_run_request,
    make_bucket,
    processes_under,
    put_source,
    script_source,
    wait_end,
)

pytestmark = pytest.mark.aws

PAIR = """
import json, sys, time
from sagemaker.pytorch import PyTorch

names = sys.argv[1:3]
for name in names:
    estimator = PyTorch(
        entry_point="demo.py",
        source_dir="{source_dir}",
        role="{role}",
        framework_version="2.3",
        py_version="py311",
        instance_count=2,
        instance_type="ml.c5.2xlarge",
        keep_alive_period_in_seconds=120,
        distribution={{"mpi": {{"enabled": True, "processes_per_host": 2}}}},
    )
    estimator.fit(job_name=name, wait=True, logs="None")
session = estimator.sagemaker_session
first = session.describe_training_job(names[0])["WarmPoolStatus"]
second = session.describe_training_job(names[1])["WarmPoolStatus"]
listed = session.sagemaker_client.list_training_jobs(
    NameContains=names[1], WarmPoolStatusEquals="Available"
)["TrainingJobSummaries"]
session.update_training_job(names[1], resource_config={{"KeepAlivePeriodInSeconds": 0}})
for _ in range(600):  # the pool ends after the answer, as SageMaker's: asked until it has
    ended = session.describe_training_job(names[1])["WarmPoolStatus"]
    if ended["Status"] == "Terminated":
        break
    time.sleep(0.1)
print("RESULT", json.dumps([first, second, listed, ended], default=str))
"""


def _role(tag: str) -> str:
    """A role of this test's own: pools of serve's other tests never match its jobs."""
    return f"arn:aws:iam::123456789012:role/warm-{tag}"


def test_sdk_v2_pair_second_job_reuses_the_first_ones_pool(
    serve: ServeProcess, tmp_path: Path, job_name: str
) -> None:
    source = tmp_path / "src"
    source.mkdir()
    for name in DEMO_FILES:
        shutil.copy(ROOT / "entry_points" / name, source / name)
    script = PAIR.format(source_dir=source, role=_role(job_name))
    names = [f"{job_name}-a", f"{job_name}-b"]
    done = subprocess.run(
        [sys.executable, "-c", script, *names],
        env=serve.env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    line = next(x for x in done.stdout.splitlines() if x.startswith("RESULT "))
    first, second, listed, ended = json.loads(line[7:])
    assert first["Status"] == "Reused"
    assert first["ReusedByJob"] == names[1]
    assert isinstance(first["ResourceRetainedBillableTimeInSeconds"], int)
    assert 0 <= first["ResourceRetainedBillableTimeInSeconds"] <= 120
    assert second == {"Status": "Available"}
    assert [s["TrainingJobName"] for s in listed] == [names[1]]
    assert listed[0]["WarmPoolStatus"] == {"Status": "Available"}
    assert ended["Status"] == "Terminated"
    assert ended["ResourceRetainedBillableTimeInSeconds"] >= 0
    assert serve.wait_for(f"{names[1]}: reuses the warm pool of {names[0]}", timeout=5)
    # the instances themselves: made by the first job, and the second runs on them
    made = serve.wait_for(f"{names[0]}: smmpi: warm instances job-{names[0]}", timeout=5)
    assert made.endswith("made and kept 120 s after the run"), made
    reused = serve.wait_for(f"{names[1]}: smmpi: warm instances job-{names[0]}", timeout=5)
    assert reused.endswith("reused; kept 120 s after the run"), reused
    # and what they were prepared as: the second job's worker is forked from the first's
    prepared = serve.wait_for(f"{names[0]}: instances ready (process ", timeout=5)
    server = prepared.split("(process ")[1].split(",")[0]
    assert serve.wait_for(f"{names[1]}: instances ready (process {server}, kept by", timeout=5)


def _job(serve: ServeProcess, bucket: str, name: str, role: str, *args: str) -> dict[str, Any]:
    request = dry_run_request(serve.env, name, bucket, "--instances", "2", "--ppn", "1", *args)
    request["RoleArn"] = role
    put_source(serve, request, demo_source())
    serve.client("sagemaker").create_training_job(**request)
    return wait_end(serve, name)


def _warm(serve: ServeProcess, name: str) -> dict[str, Any]:
    status: dict[str, Any] = serve.client("sagemaker").describe_training_job(TrainingJobName=name)[
        "WarmPoolStatus"
    ]
    return status


def test_a_pool_ends_after_its_period_and_only_matching_jobs_reuse_it(
    serve: ServeProcess, bucket: str, job_name: str
) -> None:
    role = _role(job_name)
    kept = _job(serve, bucket, f"{job_name}-kept", role, "--keep-alive", "300")
    assert kept["TrainingJobStatus"] == "Completed", kept.get("FailureReason")
    assert kept["WarmPoolStatus"] == {"Status": "Available"}
    # another keep-alive period, another role, another count: none of them matches
    other = _job(serve, bucket, f"{job_name}-short", role, "--keep-alive", "2")
    _job(serve, bucket, f"{job_name}-role", _role(f"{job_name}-x"), "--keep-alive", "300")
    request = dry_run_request(serve.env, f"{job_name}-one", bucket, "--keep-alive", "300")
    request["RoleArn"] = role
    put_source(serve, request, demo_source())
    serve.client("sagemaker").create_training_job(**request)
    wait_end(serve, f"{job_name}-one")
    assert _warm(serve, f"{job_name}-kept") == {"Status": "Available"}
    assert other["WarmPoolStatus"] == {"Status": "Available"}
    deadline = time.monotonic() + 60
    while _warm(serve, f"{job_name}-short")["Status"] == "Available":
        assert time.monotonic() < deadline, "the 2 s pool is still Available after 60 s"
        time.sleep(0.2)
    ended = _warm(serve, f"{job_name}-short")
    assert ended["Status"] == "Terminated"
    assert ended["ResourceRetainedBillableTimeInSeconds"] >= 2
    assert "ReusedByJob" not in ended


def test_a_job_that_fails_keeps_no_pool(serve: ServeProcess, bucket: str, job_name: str) -> None:
    request = dry_run_request(
        serve.env, job_name, bucket, "--instances", "2", "--ppn", "1", "--keep-alive", "300"
    )
    request["RoleArn"] = _role(job_name)
    request["HyperParameters"]["sagemaker_program"] = json.dumps("train.py")
    put_source(serve, request, script_source("raise SystemExit(3)\n"))
    serve.client("sagemaker").create_training_job(**request)
    desc = wait_end(serve, job_name)
    assert desc["TrainingJobStatus"] == "Failed"
    assert desc["WarmPoolStatus"] == {
        "Status": "Terminated",
        "ResourceRetainedBillableTimeInSeconds": 0,
    }
    prepared = serve.wait_for(f"{job_name}: instances ready (process ", timeout=5)
    server = int(prepared.split("(process ")[1].split(",")[0])
    deadline = time.monotonic() + 60  # nothing keeps its instances: their process ends
    while Path(f"/proc/{server}").exists():
        assert time.monotonic() < deadline, f"{prepared}: still running"
        time.sleep(0.1)
    sm = serve.client("sagemaker")
    with pytest.raises(sm.exceptions.ClientError) as refused:  # no pool left to keep longer
        sm.update_training_job(
            TrainingJobName=job_name, ResourceConfig={"KeepAlivePeriodInSeconds": 600}
        )
    assert refused.value.response["Error"]["Code"] == "ValidationException"
    assert "pool is InUse or Available" in refused.value.response["Error"]["Message"]
    assert (
        sm.describe_training_job(TrainingJobName=job_name)["ResourceConfig"]
        == (request["ResourceConfig"])
    )


def test_serves_stop_terminates_every_available_pool(tmp_path: Path) -> None:
    state = tmp_path / "state"
    env = base_env(tmp_path)
    first = ServeProcess(state, env)
    try:
        make_bucket(first, "warm-stop")
        desc = _job(first, "warm-stop", "warm-stop-job", _role("stop"), "--keep-alive", "3600")
        assert desc["WarmPoolStatus"] == {"Status": "Available"}
        assert keepers(state / "warm")  # its instances, kept
    finally:
        assert first.stop() == 0
    gone(state / "warm", "the instances kept after serve stopped")  # nothing outlives serve
    again = ServeProcess(state, env)
    try:
        shown = _warm(again, "warm-stop-job")
        assert shown["Status"] == "Terminated"
        assert 0 <= shown["ResourceRetainedBillableTimeInSeconds"] < 3600
        listed = again.client("sagemaker").list_training_jobs(WarmPoolStatusEquals="Available")
        assert listed["TrainingJobSummaries"] == []
    finally:
        again.stop()


def test_a_killed_serve_leaves_no_kept_instance_or_fork_server(tmp_path: Path) -> None:
    state = tmp_path / "state"
    serve = ServeProcess(state, base_env(tmp_path))
    try:
        make_bucket(serve, "warm-kill")
        desc = _job(serve, "warm-kill", "warm-kill-job", _role("kill"), "--keep-alive", "3600")
        assert desc["WarmPoolStatus"] == {"Status": "Available"}
        kept = serve.wait_for("warm-kill-job: instances ready (process ", timeout=5)
        server = int(kept.split("(process ")[1].split(",")[0])
        assert Path(f"/proc/{server}").exists() and keepers(state / "warm")  # the pool's
    finally:
        serve.stop(signal.SIGKILL)  # no stop of its own: its sockets close with it
    gone(state / "warm", "the instances kept after serve was killed")
    deadline = time.monotonic() + 60
    while processes_under(f"smmpi.serve.forkserver {state}"):
        assert time.monotonic() < deadline, processes_under(f"smmpi.serve.forkserver {state}")
        time.sleep(0.1)
