"""``smmpi serve``'s own command line: bad input is one line and exit 2, with nothing created."""

from __future__ import annotations

import json
import socket
import subprocess
import time
from pathlib import Path

import pytest

from tests.helpers import BIN
from tests.serve.serving import (
    ServeProcess,
    demo_source,
    dry_run_request,
    log_lines,
    make_bucket,
    put_source,
    script_source,
    wait_end,
)

pytestmark = pytest.mark.aws


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--parallel", "0"], "--parallel"),
        (["--parallel", "-3"], "--parallel"),
        (["--port", "70000"], "--port"),
        (["--port", "-1"], "--port"),
        (["--isolation", "vm"], "--isolation"),
        (["--bind", "evil host"], "--bind"),
        (["--bind", "203.0.113.5"], "--bind"),  # TEST-NET-3: no address of this machine
        (["--bind", "127.0.0.1:80"], "--bind"),
    ],
)
def test_bad_options_are_one_line_and_exit_2(
    args: list[str], says: str, env: dict[str, str], tmp_path: Path
) -> None:
    state = tmp_path / "state"
    done = subprocess.run(
        [str(BIN / "smmpi"), "serve", "--state", str(state), *args],
        env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and says in done.stderr
    assert not state.exists()


def test_a_busy_port_is_one_line_naming_it_and_exit_2(env: dict[str, str], tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        done = subprocess.run(
            [str(BIN / "smmpi"), "serve", "--state", str(tmp_path / "state"), "--port", str(port)],
            env=env, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines() == [
        f"smmpi: invalid --port: {port}; allowed: a free port on 127.0.0.1 (0: any free port)"
    ]
    assert not (tmp_path / "state").exists()


def test_a_state_path_that_is_a_file_or_a_link_is_refused(
    env: dict[str, str], tmp_path: Path
) -> None:
    (tmp_path / "file").write_text("x")
    (tmp_path / "link").symlink_to(tmp_path / "elsewhere")
    for state in ("file", "link"):
        done = subprocess.run(
            [str(BIN / "smmpi"), "serve", "--state", str(tmp_path / state)],
            env=env, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert done.returncode == 2 and "--state" in done.stderr, done.stderr
    assert not (tmp_path / "elsewhere").exists()


def test_binding_beyond_loopback_warns(env: dict[str, str], tmp_path: Path) -> None:
    serve = ServeProcess(tmp_path / "state", env, "--bind", "0.0.0.0")
    try:
        assert any("warning: listening on 0.0.0.0" in line for line in serve.lines)
        assert serve.client("sagemaker").list_training_jobs()["TrainingJobSummaries"] == []
    finally:
        serve.stop()


TIMED = """
import time
from mpi4py import MPI
print(f"stamp {time.time():.3f}", flush=True)
time.sleep(3)
"""


def test_a_ranks_print_reaches_get_log_events_within_a_second(
    serve: ServeProcess, bucket: str, job_name: str
) -> None:
    request = dry_run_request(serve.env, job_name, bucket)
    request["HyperParameters"]["sagemaker_program"] = json.dumps("train.py")
    put_source(serve, request, script_source(TIMED))
    serve.client("sagemaker").create_training_job(**request)
    logs = serve.client("logs")
    deadline = time.monotonic() + 120
    while True:
        found = [x for ls in log_lines(serve, job_name).values() for x in ls if "stamp " in x]
        if found:
            break
        assert time.monotonic() < deadline, "no line reached the log"
        time.sleep(0.05)
    seen = time.time()
    stream = next(s for s in log_lines(serve, job_name) if "/algo-1-" in s)
    events = logs.get_log_events(
        logGroupName="/aws/sagemaker/TrainingJobs", logStreamName=stream, startFromHead=True
    )["events"]
    event = next(e for e in events if "stamp " in e["message"])
    printed = float(event["message"].rsplit("stamp ", 1)[1])
    assert event["timestamp"] / 1000 - printed < 1.0
    assert seen - printed < 5.0  # the test's own polling, on a loaded machine
    wait_end(serve, job_name)  # no job of this test runs on into the next test's


def test_parallel_two_runs_two_jobs_at_once(env: dict[str, str], tmp_path: Path) -> None:
    serve = ServeProcess(tmp_path / "state", env, "--parallel", "2")
    try:
        make_bucket(serve, "parallel-bucket")
        names = ["parallel-a", "parallel-b"]
        for name in names:
            request = dry_run_request(
                serve.env, name, "parallel-bucket", "--instances", "3", "--ppn", "2"
            )
            put_source(serve, request, demo_source())
            serve.client("sagemaker").create_training_job(**request)
        sm = serve.client("sagemaker")
        deadline = time.monotonic() + 120
        while not all(
            sm.describe_training_job(TrainingJobName=n)["SecondaryStatus"] != "Starting"
            for n in names
        ):
            assert time.monotonic() < deadline
            time.sleep(0.1)
        for name in names:
            desc = wait_end(serve, name)
            assert desc["TrainingJobStatus"] == "Completed", desc.get("FailureReason")
        a, b = (sm.describe_training_job(TrainingJobName=n) for n in names)
        assert a["TrainingStartTime"] < b["TrainingEndTime"]
        assert b["TrainingStartTime"] < a["TrainingEndTime"]  # they overlapped
    finally:
        serve.stop()
