"""smmpi's own commands read an ended job back from disk, as they read it when it ended.

A real job through ``smmpi serve``; its artifacts are pushed out of the keys kept made
(:mod:`smmpi.serve.coldkeys`) by other objects; then, after a restart, every key and stream
is cold (made from its files when read): ``smmpi status``, ``logs`` and ``fetch`` give what
they gave before.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from smmpi.serve import coldkeys
from tests.helpers import BIN, base_env
from tests.serve.serving import (
    REGION,
    ServeProcess,
    dry_run_request,
    make_bucket,
    put_source,
    script_source,
    wait_end,
)

pytestmark = pytest.mark.aws


TRAIN = """
import os
from mpi4py import MPI
rank = MPI.COMM_WORLD.Get_rank()
print(f"hello from rank {rank}", flush=True)
os.makedirs("/opt/ml/model", exist_ok=True)
open(f"/opt/ml/model/rank-{rank}.txt", "w").write(f"rank {rank}")
MPI.COMM_WORLD.Barrier()
"""


def _cli(serve: ServeProcess, name: str, to: Path) -> dict[str, Any]:
    """What ``smmpi status``, ``logs`` and ``fetch`` give for job ``name``."""
    env = {**serve.env, "SMMPI_REGION": REGION}
    found: dict[str, Any] = {}
    for args in (["status", name], ["status", name, "--json"], ["logs", name],
                 ["fetch", name, "--to", str(to)]):  # fmt: skip
        done = subprocess.run([str(BIN / "smmpi"), *args], env=env, capture_output=True,
                              text=True, timeout=120)  # fmt: skip
        assert done.returncode == 0, done.stderr
        found[" ".join(args[:-2] if args[0] == "fetch" else args)] = done.stdout.replace(
            str(to), "TO"
        )
    found["fetched"] = {
        str(p.relative_to(to)): p.read_text() for p in sorted(to.rglob("*")) if p.is_file()
    }
    return found


def test_smmpi_status_logs_and_fetch_read_an_ended_job_back_from_disk(tmp_path: Path) -> None:
    """A real job through ``smmpi serve``; its artifacts pushed out of the keys kept made by
    other objects, then every key and stream cold after a restart: smmpi's own commands
    read the job as they did when it ended."""
    name, bucket = "cold-cli-job", "cold-cli"
    serve = ServeProcess(tmp_path / "state", base_env(tmp_path))
    try:
        make_bucket(serve, bucket)
        request = dry_run_request(serve.env, name, bucket)
        request["HyperParameters"]["sagemaker_program"] = json.dumps("train.py")
        put_source(serve, request, script_source(TRAIN))
        serve.client("sagemaker").create_training_job(**request)
        assert wait_end(serve, name)["TrainingJobStatus"] == "Completed"
        s3 = serve.client("s3")
        for i in range(coldkeys.RECENT + 16):
            s3.put_object(Bucket=bucket, Key=f"other/{i}", Body=f"object {i}".encode())
        before = _cli(serve, name, tmp_path / "before")
    finally:
        assert serve.stop() == 0
    assert "hello from rank 1" in before["logs " + name]
    assert before["fetched"] == {
        "model/rank-0.txt": "rank 0",
        "model/rank-1.txt": "rank 1",
        "output/success": "",
    }
    again = ServeProcess(tmp_path / "state", base_env(tmp_path))
    try:
        assert _cli(again, name, tmp_path / "after") == before
        assert again.client("s3").get_object(Bucket=bucket, Key="other/0")["Body"].read() == (
            b"object 0"
        )
    finally:
        assert again.stop() == 0
