"""What is planted in serve's state folder never stops it with a traceback, nor is followed.

A file in ``jobs/`` that is not a job's record is set aside (renamed, said in one line) and
serve starts; a ``credentials.json`` that is not serve's own, or a link where serve keeps a
folder, is one line naming it and exit 2.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.helpers import BIN, base_env
from tests.serve.serving import ServeProcess

pytestmark = pytest.mark.aws

RECORD = {
    "TrainingJobName": "x",
    "TrainingJobStatus": "Completed",
    "SecondaryStatus": "Completed",
    "CreationTime": 1.0,
    "LastModifiedTime": 2.0,
    "SecondaryStatusTransitions": [],
    "_Region": "us-west-2",
    "_Tags": [],
}


def _plant(jobs: Path, outside: Path) -> dict[str, str]:
    """Files that are no job's record, by name: what each holds."""
    planted = {
        "garbage": "{not json",
        "a-list": "[1, 2]",
        "no-region": json.dumps({k: v for k, v in RECORD.items() if k != "_Region"}),
        "other-name": json.dumps({**RECORD, "TrainingJobName": "../../etc/passwd"}),
        "empty": "",
    }
    jobs.mkdir(parents=True)
    for name, text in planted.items():
        (jobs / f"{name}.json").write_text(text)
    (outside / "elsewhere.json").write_text(json.dumps({**RECORD, "TrainingJobName": "linked"}))
    (jobs / "linked.json").symlink_to(outside / "elsewhere.json")
    return planted


def test_a_planted_job_file_is_set_aside_and_serve_starts(tmp_path: Path) -> None:
    state = tmp_path / "state"
    planted = _plant(state / "jobs", tmp_path)
    (state / "jobs" / "ok.json").write_text(json.dumps({**RECORD, "TrainingJobName": "ok"}))
    serve = ServeProcess(state, base_env(tmp_path))
    try:
        jobs = serve.client("sagemaker").list_training_jobs()["TrainingJobSummaries"]
        assert [job["TrainingJobName"] for job in jobs] == ["ok"]
        for name in [*planted, "linked"]:
            line = serve.wait_for(f"jobs/{name}.json is not a job's record")
            assert line.endswith(f"set aside as {name}.json.set-aside"), line
            assert not (state / "jobs" / f"{name}.json").exists()
        for name, text in planted.items():  # kept as they were, under another name
            assert (state / "jobs" / f"{name}.json.set-aside").read_text() == text
        aside = state / "jobs" / "linked.json.set-aside"
        assert aside.is_symlink() and os.readlink(aside) == str(tmp_path / "elsewhere.json")
        assert "Traceback" not in "\n".join(serve.lines)
    finally:
        assert serve.stop() == 0


def _serve(state: Path, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN / "smmpi"), "serve", "--port", "0", "--state", str(state)],
        env=base_env(tmp_path), capture_output=True, text=True, timeout=60,
    )  # fmt: skip


@pytest.mark.parametrize("kind", ["link", "garbage", "a-list", "no-secret", "folder"])
def test_credentials_that_are_not_serves_are_one_line_and_exit_2(tmp_path: Path, kind: str) -> None:
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    keys = state / "credentials.json"
    target = tmp_path / "target.json"
    target.write_text(json.dumps({"access_key": "AKIA" + "A" * 16, "secret_key": "s" * 40}))
    if kind == "link":
        keys.symlink_to(target)
    elif kind == "folder":
        keys.mkdir()
    else:
        text = {"garbage": "\x00\xff nope", "a-list": "[]", "no-secret": '{"access_key": "A"}'}
        keys.write_text(text[kind])
    done = _serve(state, tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.splitlines() == [
        f"smmpi: invalid --state: '{keys}'; allowed: a state folder whose credentials.json is "
        "serve's own: a regular file (not a link) with its key pair (move it away: serve "
        "makes a new pair)"
    ]
    assert not (state / "jobs").exists() and not (state / "server.json").exists()


def test_a_link_where_serve_keeps_a_folder_is_one_line_and_exit_2(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    (tmp_path / "elsewhere").mkdir()
    (state / "jobs").symlink_to(tmp_path / "elsewhere")
    done = _serve(state, tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.splitlines() == [
        f"smmpi: invalid --state: '{state / 'jobs'}'; allowed: a folder serve made "
        "(serve follows no link)"
    ]
    assert list((tmp_path / "elsewhere").iterdir()) == []


@pytest.mark.parametrize(
    ("planted", "kind"),
    [
        ("s3/buckets.json", "garbage"),
        ("s3/buckets.json", "link"),
        ("s3/buckets.json", "fifo"),
        ("logs/some-job/streams.json", "garbage"),
        ("logs/some-job/streams.json", "link"),
    ],
)
def test_another_planted_state_file_is_one_line_naming_it(
    tmp_path: Path, planted: str, kind: str
) -> None:
    state = tmp_path / "state"
    path = state / planted
    path.parent.mkdir(parents=True)
    os.chmod(state, 0o700)
    if kind == "garbage":
        path.write_text("{garbage")
    elif kind == "link":
        (tmp_path / "elsewhere.json").write_text("{}")
        path.symlink_to(tmp_path / "elsewhere.json")
    else:
        os.mkfifo(path)  # a reader would wait for ever
    done = _serve(state, tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"smmpi: invalid --state: '{path}'"), lines
    assert "allowed: a state file as serve wrote it (" in lines[0], lines
