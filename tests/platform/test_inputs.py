"""`submit --local`: channels on every host, nothing created remotely."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import (
    MotoServer,
    run_checked,
    s3_state,
    training_jobs,
)

pytestmark = pytest.mark.aws


def test_local_runs_here_and_creates_nothing_remote(
    moto_server: MotoServer, aws: dict[str, str]
) -> None:
    result = run_checked(["submit", "demo", "--instances", "2", "--ppn", "1", "--local"], aws)
    assert result.returncode == 0, result.stderr
    assert "demo: all 2 ranks verified their results" in result.stdout
    assert "Completed" in result.stderr
    assert training_jobs(moto_server) == [] and s3_state(moto_server) == {}


GATHER_CHANNELS = """\
import json
import os

from mpi4py import MPI

comm = MPI.COMM_WORLD
mine = {
    "rank": comm.Get_rank(),
    "host": os.environ["CURRENT_HOST"],
    "dir": os.environ["SM_CHANNEL_TRAIN"],
    "files": sorted(os.listdir(os.environ["SM_CHANNEL_TRAIN"])),
}
everyone = comm.gather(mine, root=0)
if comm.Get_rank() == 0:
    print("CHANNELS " + json.dumps(everyone))
"""


def test_local_file_channel_on_every_host(
    moto_server: MotoServer, aws: dict[str, str], tmp_path: Path
) -> None:
    """`--local --input train=file:///DIR`: each emulated host's SM_CHANNEL_TRAIN holds them."""
    data = tmp_path / "data"
    (data / "sub").mkdir(parents=True)
    (data / "a.txt").write_text("a\n")
    (data / "b.csv").write_text("1,2\n")
    (data / "sub" / "c.txt").write_text("c\n")
    script = tmp_path / "src" / "gather_channels.py"
    script.parent.mkdir()
    script.write_text(GATHER_CHANNELS)
    result = run_checked(
        [
            "submit",
            str(script),
            "--instances",
            "2",
            "--ppn",
            "1",
            "--local",
            "--isolation",
            "processes",  # SM_CURRENT_HOST per host (isolated hosts forward algo-1's)
            "--input",
            f"train=file://{data}",
        ],
        aws,
    )
    assert result.returncode == 0, result.stderr
    line = next(ln for ln in result.stdout.splitlines() if "CHANNELS " in ln)
    ranks = json.loads(line.split("CHANNELS ", 1)[1])
    assert [(r["rank"], r["host"]) for r in ranks] == [(0, "algo-1"), (1, "algo-2")]
    for r in ranks:
        assert r["files"] == ["a.txt", "b.csv", "sub"]
        assert r["dir"].endswith(f"/{r['host']}/opt/ml/input/data/train")
    assert ranks[0]["dir"] != ranks[1]["dir"]  # each host has its own copy
    assert training_jobs(moto_server) == [] and s3_state(moto_server) == {}
