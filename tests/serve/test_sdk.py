"""The SageMaker SDK v2, used as its documentation shows, trains for real against serve."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import DEMO_FILES, ROOT
from tests.serve.serving import ROLE, ServeProcess

pytestmark = pytest.mark.aws

FIT = """
import sys
from sagemaker.{module} import {cls}
from sagemaker.s3 import S3Downloader

estimator = {cls}(
    entry_point="{entry}",
    source_dir="{source_dir}",
    role="{role}",
    framework_version="{version}",
    py_version="{py}",
    instance_count={instances},
    instance_type="ml.c5.2xlarge",
    distribution={{"mpi": {{"enabled": True, "processes_per_host": 2}}}},
)
try:
    estimator.fit(wait=True, logs="All")
except Exception as err:
    print("RAISED", type(err).__name__, err)
    sys.exit(7)
print("MODEL", estimator.model_data)
S3Downloader.download(estimator.model_data, "{download}")
"""


FRAMEWORKS = {
    "pytorch": {"module": "pytorch", "cls": "PyTorch", "version": "2.3", "py": "py311"},
    "tensorflow": {"module": "tensorflow", "cls": "TensorFlow", "version": "2.16", "py": "py310"},
}


def _fit(
    serve: ServeProcess, tmp_path: Path, entry: str, instances: int, framework: str = "pytorch"
) -> subprocess.CompletedProcess[str]:
    source = tmp_path / "src"
    source.mkdir()
    for name in DEMO_FILES:
        shutil.copy(ROOT / "entry_points" / name, source / name)
    (source / "fails.py").write_text(
        "from mpi4py import MPI\n"
        "print('rank', MPI.COMM_WORLD.Get_rank(), 'starts', flush=True)\n"
        "if MPI.COMM_WORLD.Get_rank() == 3:\n"
        "    raise RuntimeError('rank three is broken')\n"
        "MPI.COMM_WORLD.Barrier()\n"
    )
    script = FIT.format(
        **FRAMEWORKS[framework],
        entry=entry,
        source_dir=source,
        role=ROLE,
        instances=instances,
        download=tmp_path / "model",
    )
    return subprocess.run(
        [sys.executable, "-c", script],
        env=serve.env,
        capture_output=True,
        text=True,
        timeout=600,
    )


@pytest.mark.parametrize("framework", ["pytorch", "tensorflow"])
def test_fit_with_logs_prints_every_ranks_lines_and_the_model_downloads(
    serve: ServeProcess, tmp_path: Path, framework: str
) -> None:
    done = _fit(serve, tmp_path, "demo.py", 2, framework)
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    for rank, host in ((0, 1), (1, 1), (2, 2), (3, 2)):
        assert f"rank {rank} (algo-{host})" in out, out
    assert "demo: all 4 ranks verified their results" in out
    assert "Completed - Training job completed" in out
    assert "Training seconds:" in out and "Billable seconds:" in out
    assert (tmp_path / "model" / "model.tar.gz").is_file()


def test_a_failing_job_raises_the_sdks_exception_with_our_reason(
    serve: ServeProcess, tmp_path: Path
) -> None:
    done = _fit(serve, tmp_path, "fails.py", 2)
    assert done.returncode == 7, done.stdout + done.stderr
    raised = next(line for line in done.stdout.splitlines() if line.startswith("RAISED"))
    assert raised.startswith("RAISED UnexpectedStatusException Error for Training job")
    assert "Failed. Reason: AlgorithmError: ExecuteUserScriptError:" in done.stdout
    assert "smmpi: rank 3 (algo-2) failed: RuntimeError: rank three is broken" in done.stdout
    assert "rank 3 starts" in done.stdout
