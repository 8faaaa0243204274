"""The SageMaker SDK kept imported (``SMMPI_WARM_SDK``): a kept SDK builds the very request a
command builds by itself, in a child that takes the command's world; what it raises is raised
in the command; a bad setting is one line. (The keeper's life: tests/sdk/test_keeper.py.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from smmpi import keepers
from smmpi.errors import BadInput, SmmpiError
from smmpi.sdk import warm
from smmpi.sdk.estimator import Offline, build_offline
from smmpi.sdk.model_trainer import capture_here
from smmpi.sdk.settings import resolve_settings
from smmpi.spec import MPIJob
from tests.helpers import base_env, smmpi, write

ROLE = "arn:aws:iam::123456789012:role/smmpi-warm"


@pytest.fixture
def kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A kept SDK of this test's own (its folder), ended after the test."""
    folder = tmp_path / "warm"
    monkeypatch.setenv("SMMPI_WARM_DIR", str(folder))
    monkeypatch.setenv(warm.ENV, "120")
    monkeypatch.setenv("SMMPI_CONFIG", str(tmp_path / "none.json"))
    for name in ("SMMPI_ROLE", "SMMPI_BUCKET", "SMMPI_REGION"):
        monkeypatch.delenv(name, raising=False)
    yield folder
    for path in folder.glob("sdk/*.sock"):
        keepers.tell(path)


def _jobs(tmp_path: Path) -> list[tuple[MPIJob, bool]]:
    data = tmp_path / "data"
    data.mkdir()
    return [
        (MPIJob("demo", instances=3, ppn=2, region="us-west-2"), False),
        (
            MPIJob(
                "demo",
                instances=2,
                ppn=4,
                framework="tensorflow",
                region="eu-west-1",
                role=ROLE,
                hyperparameters={"epochs": 3, "lr": "0.1"},
                env={"MY_SETTING": "on"},
                tags={"team": "hpc"},
                metric_definitions={"train:loss": "loss=([0-9.]+)"},
                use_spot=True,
                max_wait=7200,
                checkpoint_s3_uri="s3://bucket/ckpt",
            ),
            False,
        ),
        (MPIJob("demo", instances=2, ppn=1, inputs={"train": f"file://{data}"}), True),
        (MPIJob("demo", instances=2, ppn=2, keep_alive=300, base_job_name="kept"), False),
    ]


def _same(here: Offline, there: Offline) -> tuple[str, str]:
    """Both requests as JSON, each code upload's own id (random, per build) made one."""
    mine = json.dumps(here.request, sort_keys=True).replace(here.code_uri, "CODE")
    theirs = json.dumps(there.request, sort_keys=True).replace(there.code_uri, "CODE")
    assert here.code_uri.rsplit("/", 2)[0] == there.code_uri.rsplit("/", 2)[0]
    return mine, theirs


def test_a_kept_sdk_builds_the_very_request_a_command_builds(kept: Path, tmp_path: Path) -> None:
    for job, local in _jobs(tmp_path):
        settings = resolve_settings(job, offline=True)
        there = warm.call(build_offline, job, settings, "smmpi-warm-1", local)
        assert isinstance(there, Offline)
        here = build_offline(job, settings, "smmpi-warm-1", local)
        mine, theirs = _same(here, there)
        assert theirs == mine
        assert there.settings == here.settings and there.job_name == "smmpi-warm-1"
    assert len(list(kept.glob("sdk/sdk-*.sock"))) == 1  # one keeper built them all


def test_a_kept_sdk_builds_model_trainers_request_as_a_command_does(
    kept: Path, tmp_path: Path
) -> None:
    job = MPIJob("demo", instances=2, ppn=2, api="model-trainer", region="us-west-2", role=ROLE)
    settings = resolve_settings(job, offline=True)
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    there = warm.call(capture_here, job, tmp_path / "a", settings)
    here = capture_here(job, tmp_path / "b", settings)
    assert there is not None and there.notes == here.notes
    assert _unnamed(there.request) == _unnamed(here.request)
    for name, folder in here.channels.items():  # the channels' copies, made by the child
        theirs = there.channels[name]
        assert sorted(p.relative_to(theirs) for p in theirs.rglob("*")) == sorted(
            p.relative_to(folder) for p in folder.rglob("*")
        )
        assert list(theirs.rglob("*"))


def _unnamed(request: dict[str, Any]) -> str:
    """The request as JSON, its job's name made one (the SDK names a job by the second)."""
    return json.dumps(request, sort_keys=True).replace(request["TrainingJobName"], "NAME")


def _raises_bad_input() -> None:
    raise BadInput("hyperparameters.x", "y", "a value the test allows")


class _Unpicklable(SmmpiError):
    exit_code = 3

    def __init__(self, what: str, handle: Any) -> None:
        super().__init__(f"cannot go on: {what}")
        self.handle = handle


def _raises_unpicklable() -> None:
    raise _Unpicklable("a reason", lambda: None)


def test_what_the_call_raises_is_raised_in_the_command(kept: Path) -> None:
    with pytest.raises(BadInput) as bad:
        warm.call(_raises_bad_input)
    assert bad.value.field == "hyperparameters.x" and bad.value.exit_code == 2
    with pytest.raises(SmmpiError) as other:  # what cannot travel whole: its line and code
        warm.call(_raises_unpicklable)
    assert str(other.value) == "cannot go on: a reason" and other.value.exit_code == 3


def test_the_child_works_in_the_commands_folder_environment_and_streams(
    kept: Path, tmp_path: Path
) -> None:
    code = (
        "import os, sys\n"
        "from smmpi.sdk import warm\n"
        "print(warm.call(os.getcwd), warm.call(os.getenv, 'ONLY_HERE'), flush=True)\n"
        "print(warm.call(os.getpid) != os.getpid(), flush=True)\n"
        "warm.call(os.write, 2, b'from the child\\n')\n"
    )
    env = {**base_env(tmp_path), "SMMPI_WARM_DIR": str(kept), warm.ENV: "120", "ONLY_HERE": "1"}
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=tmp_path, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [f"{tmp_path} 1", "True"]
    assert done.stderr.strip() == "from the child"


@pytest.mark.parametrize("value", ["x", "-1", "3601", "1.5", "３"])
def test_a_bad_setting_is_one_line_and_starts_nothing(tmp_path: Path, value: str) -> None:
    env = {**base_env(tmp_path), warm.ENV: value, "SMMPI_WARM_DIR": str(tmp_path / "warm")}
    write(tmp_path / "train.py", "print('hi')\n")
    for mode in ("--dry-run", "--local"):
        done = smmpi(["submit", "train.py", "-N", "1", "-n", "1", mode], env, cwd=tmp_path)
        assert done.returncode == 2
        assert done.stderr.strip() == (
            f"smmpi: invalid SMMPI_WARM_SDK: {value!r}; allowed: whole seconds from 0 to 3600"
        )
    assert not (tmp_path / "warm").exists()
    assert not (tmp_path / "home" / ".smmpi" / "local-jobs").exists()


def test_no_kept_sdk_asked_for_is_none(monkeypatch: pytest.MonkeyPatch) -> None:
    for value in ("", "0"):
        monkeypatch.setenv(warm.ENV, value)
        assert warm.call(_raises_bad_input) is None
        assert warm.run(os.getpid) == os.getpid()  # run: here, when none is kept


def test_run_is_the_kept_sdks_call_when_there_is_one(kept: Path) -> None:
    assert warm.run(os.getpid) != os.getpid()


def test_a_keeper_that_cannot_be_used_is_one_line_and_the_command_builds_itself(
    tmp_path: Path,
) -> None:
    loose = tmp_path / "loose"
    loose.mkdir(mode=0o755)
    loose.chmod(0o755)
    env = {**base_env(tmp_path), warm.ENV: "60", "SMMPI_WARM_DIR": str(loose)}
    done = smmpi(["submit", "demo", "-N", "2", "-n", "1", "--dry-run"], env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines() == [
        f"smmpi: {warm.ENV}: {loose} is not a folder of this user's only (0700, not a link); "
        "the SDK is imported here"
    ]
    assert '"TrainingJobName"' in done.stdout and not list(loose.iterdir())


def test_a_command_with_a_stream_closed_builds_through_the_kept_sdk(
    kept: Path, tmp_path: Path
) -> None:
    """The child gets the streams the command has, and none it has not."""
    env = {**base_env(tmp_path), "SMMPI_WARM_DIR": str(kept), warm.ENV: "120"}
    line = "smmpi submit demo -N 2 -n 1 --dry-run --json <&- | tail -1"
    done = subprocess.run(
        ["bash", "-c", line], env=env, cwd=tmp_path, capture_output=True, text=True
    )
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert done.stdout.strip() == "}"
    assert len(list(kept.glob("sdk/sdk-*.sock"))) == 1
