"""Every way a local file reaches a job's channels is checked before the job exists.

``--input`` is checked by the spec; a request handed to the local runner (serve's, the
SDK's, ModelTrainer's channel folders) is checked by the runner itself, before the local
job's folder is made: a file of /proc, /sys or /dev, a FIFO or a device is one line.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import pytest

from smmpi.api import options
from smmpi.archives import pack
from smmpi.bounded import FileRefused
from smmpi.runners.local.job import run
from smmpi.sdk.model_trainer import capture_offline
from smmpi.spec import MPIJob
from tests.helpers import base_env, smmpi, write

if TYPE_CHECKING:
    from smmpi.aws.types import Request

PROGRAM = "from mpi4py import MPI\nprint('rank', MPI.COMM_WORLD.rank)\n"


@pytest.fixture
def jobs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("SMMPI_LOCAL_JOBS", str(tmp_path / "jobs"))
    monkeypatch.setenv("SAGEMAKER_SUPPRESS_V2_WARNING", "1")
    return tmp_path / "jobs"


def _sources(tmp_path: Path) -> dict[str, str]:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    (tmp_path / "to-proc").symlink_to("/proc")
    return {
        "proc-environ": "/proc/self/environ",
        "dev-zero": "/dev/zero",
        "fifo": str(fifo),
        "link-to-proc": str(tmp_path / "to-proc"),
    }


def _channel(path: str, form: str) -> dict[str, Any]:
    if form == "FileDataSource":
        return {"ChannelName": "train", "DataSource": {"FileDataSource": {"FileUri": path}}}
    uri = Path(path).as_uri()
    return {"ChannelName": "train", "DataSource": {"S3DataSource": {"S3Uri": uri}}}


def _nothing_made(jobs: Path) -> None:
    assert not jobs.exists() or list(jobs.iterdir()) == []


@pytest.mark.parametrize("form", ["S3DataSource", "FileDataSource"])
def test_a_request_reading_kernel_or_special_files_is_refused_before_its_job_exists(
    tmp_path: Path, jobs: Path, form: str
) -> None:
    script = write(tmp_path / "train.py", PROGRAM)
    args = ["submit", str(script), "-N", "1", "-n", "2", "--dry-run", "--json"]
    done = smmpi(args, base_env(tmp_path))
    assert done.returncode == 0, done.stderr
    request = cast("Request", json.loads(done.stdout)["request"])
    source = pack([(script, "train.py")])
    for label, path in _sources(tmp_path).items():
        request["InputDataConfig"] = [_channel(path, form)]
        with pytest.raises(FileRefused) as err:
            run(request, source, options(progress=lambda line: None))
        assert "InputDataConfig.train" in str(err.value), label
        assert err.value.exit_code == 2
        _nothing_made(jobs)


def test_a_model_trainer_channel_of_kernel_files_is_refused_before_its_job_exists(
    tmp_path: Path, jobs: Path
) -> None:
    program = write(tmp_path / "train.py", PROGRAM)
    job = MPIJob(str(program), instances=2, ppn=1, api="model-trainer")
    captured = capture_offline(job, tmp_path / "capture")
    request = cast("Request", captured.request)
    request["InputDataConfig"] = [*request.get("InputDataConfig", []), _channel("/tmp", "S3")]
    for path in _sources(tmp_path).values():
        channels = {**captured.channels, "train": Path(path)}  # the folder the SDK hands over
        with pytest.raises(FileRefused, match=r"InputDataConfig\.train"):
            run(request, b"", options(progress=lambda line: None), channels=channels)
        _nothing_made(jobs)
