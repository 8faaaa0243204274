"""Exact mode with the toolkit: the TensorFlow images' toolkit, and the code from where the
request says (the toolkit unpacks ``sourcedir.tar.gz`` itself into an empty /opt/ml/code).

Each test runs one job under the real toolkit (its own 30 s waits included).
"""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from tests.exact.test_toolkit import TF, toolkit_env
from tests.helpers import ROLE, MotoServer, make_bucket, processes_left, smmpi, write

PROGRAM = """\
import importlib.metadata, json, os
from mpi4py import MPI

rank = MPI.COMM_WORLD.Get_rank()
seen = {
    "version": importlib.metadata.version("sagemaker-training"),
    "module": os.environ["SM_FRAMEWORK_MODULE"],
    "module_dir": os.environ["SM_MODULE_DIR"],
    "code": sorted(os.listdir("/opt/ml/code")),
}
with open(f"/opt/ml/model/seen-{rank}.json", "w") as f:
    json.dump(seen, f)
print("SEEN", rank, flush=True)
"""


def test_a_tensorflow_job_runs_the_tensorflow_images_toolkit_on_its_own_code(
    tmp_path: Path,
) -> None:
    program = write(tmp_path / "seen.py", PROGRAM)
    argv = ["run", str(program), "-N", "2", "-n", "1", "--exact", "--keep"]
    done = smmpi([*argv, "--framework", "tensorflow"], toolkit_env(tmp_path), timeout=300)
    assert done.returncode == 0, done.stderr
    assert f"toolkit's `train` (4.8.3, from {TF}), with a real sshd" in done.stderr
    run = next((tmp_path / "tmp").glob("smmpi-run-*"))
    staged = run / ".smmpi" / "code" / "sourcedir.tar.gz"
    assert stat.S_IMODE(staged.stat().st_mode) == 0o600
    for rank, host in ((0, "algo-1"), (1, "algo-2")):
        seen = json.loads((run / host / "opt" / "ml" / "model" / f"seen-{rank}.json").read_text())
        assert seen == {
            "version": "4.8.3",
            "module": "sagemaker_tensorflow_container.training:main",
            "module_dir": str(staged),
            "code": ["seen.py", "smmpi_runtime.py"],  # unpacked by the toolkit, on each instance
        }
    assert processes_left(str(tmp_path)) == []


@pytest.mark.aws
def test_run_from_job_exact_stages_the_uploaded_code_for_the_toolkit(
    moto_server: MotoServer, tmp_path: Path, guard: dict[str, str]
) -> None:
    env = toolkit_env(tmp_path) | guard | moto_server.aws_env()  # under the network guard
    env["SMMPI_LOCAL_JOBS"] = str(tmp_path / "jobs")
    make_bucket(moto_server, "smmpi-exact-code")
    name = "smmpi-exact-from-job"
    submit = ["submit", "demo", "-N", "2", "-n", "2", "--role", ROLE, "--job-name", name]
    done = smmpi([*submit, "--bucket", "smmpi-exact-code", "--no-wait"], env)
    assert done.returncode == 0, done.stderr
    done = smmpi(["run", "--from-job", name, "--exact"], env, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "demo: all 4 ranks verified their results" in done.stdout
    record = json.loads((tmp_path / "jobs" / name / "describe.json").read_text())
    uri = json.loads(record["HyperParameters"]["sagemaker_submit_directory"])
    bucket, key = uri.removeprefix("s3://").split("/", 1)
    uploaded = moto_server.boto3_client("s3", "us-west-2").get_object(Bucket=bucket, Key=key)
    hosts = tmp_path / "jobs" / name / "hosts"
    staged = hosts / ".smmpi" / "code" / "sourcedir.tar.gz"
    assert staged.read_bytes() == uploaded["Body"].read()  # the object, staged as a file
    config = hosts / "algo-2" / "opt" / "ml" / "input" / "config" / "hyperparameters.json"
    assert json.loads(json.loads(config.read_text())["sagemaker_submit_directory"]) == str(staged)
    code = sorted(p.name for p in (hosts / "algo-2" / "opt" / "ml" / "code").iterdir())
    assert code == [
        "broadcast.py",
        "demo.py",
        "gather_reduce_broadcast.py",
        "point_to_point.py",
        "smmpi_runtime.py",
    ]
    assert processes_left(str(tmp_path)) == []
