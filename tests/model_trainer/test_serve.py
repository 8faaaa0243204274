"""ModelTrainer pointed at ``smmpi serve`` trains a 2 x 2 MPI job end to end: SDK v2's
``sagemaker.modules.train`` and SDK v3's ``sagemaker.train`` (in its own venv), each as a
user's script run as a subprocess with serve's exports, ``train(wait=True, logs=True)``.

The SDK uploads its ``code`` and ``sm_drivers`` channels to serve's S3, serve runs the
request's own container start on every instance, and the logs come back through CloudWatch.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from smmpi.serve.state import read_json
from tests.helpers import BIN, run_checked, write
from tests.model_trainer.test_local_driver import FAILS, WORLD
from tests.model_trainer.test_short_world import SHORT
from tests.sdk.sdk3 import sdk3_python
from tests.serve.serving import ROLE, ServeProcess, log_lines, make_role

pytestmark = pytest.mark.aws

IMAGE = "763104351884.dkr.ecr.us-west-2.amazonaws.com/pytorch-training:2.3.0-cpu-py311"
#: SDK v2: sagemaker_core's Session reads no SDK defaults config by itself (the estimators'
#: Session does); the user hands it serve's (its default bucket, telemetry off).
V2 = """
from sagemaker.config import load_sagemaker_config
from sagemaker.modules.train import ModelTrainer
from sagemaker.modules.configs import SourceCode, Compute
from sagemaker.modules.distributed import MPI
from sagemaker_core.helper.session_helper import Session

config = load_sagemaker_config()
session = Session(
    default_bucket=config["SageMaker"]["PythonSDK"]["Modules"]["Session"]["DefaultS3Bucket"]
)
session.sagemaker_config = config
"""
#: SDK v3 leaves logging to the application, as its documentation says.
V3 = """
import logging
from sagemaker.train.model_trainer import ModelTrainer
from sagemaker.core.training.configs import SourceCode, Compute
from sagemaker.train.distributed import MPI
from sagemaker.core.helper.session_helper import Session

logging.basicConfig(level=logging.INFO, format="%(message)s")
session = Session()
"""
TRAIN = """
import sys
trainer = ModelTrainer(
    training_image="{image}",
    role="{role}",
    source_code=SourceCode(source_dir="{source}", entry_script="{entry}"),
    compute=Compute(instance_type="ml.c5.2xlarge", instance_count=2),
    distributed=MPI(process_count_per_node=2{more}),
    base_job_name="mt-{sdk}",
    sagemaker_session=session,
)
try:
    trainer.train(wait=True, logs=True)
except Exception as err:
    print("RAISED", type(err).__name__, err, flush=True)
    sys.exit(7)
print("STATUS", trainer._latest_training_job.training_job_status)
"""


WHOLE = ', mpi_additional_options=["-np", "4"]'


def _train(
    serve: ServeProcess,
    tmp_path: Path,
    guard: dict[str, str],
    sdk: str,
    entry: str,
    more: str = WHOLE,
) -> subprocess.CompletedProcess[str]:
    source = tmp_path / "src"
    source.mkdir()
    write(source / "world.py", WORLD)
    write(source / "fails.py", FAILS)
    head, python = (V2, str(BIN / "python")) if sdk == "v2" else (V3, sdk3_python())
    script = head + TRAIN.format(
        image=IMAGE, role=ROLE, source=source, entry=entry, sdk=sdk, more=more
    )
    make_role(serve)  # v3 checks that it exists and trusts SageMaker (IAM's GetRole)
    env = {**serve.env, **guard, "COLUMNS": "400"}
    return subprocess.run(
        [python, "-c", script], env=env, capture_output=True, text=True, timeout=600
    )


@pytest.mark.parametrize("sdk", ["v2", "v3"])
def test_model_trainer_trains_a_2x2_mpi_job_against_serve(
    serve: ServeProcess, tmp_path: Path, guard: dict[str, str], sdk: str
) -> None:
    done = _train(serve, tmp_path, guard, sdk, "world.py")
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-4000:]
    assert "STATUS Completed" in done.stdout
    for rank, host in ((0, 1), (1, 1), (2, 2), (3, 2)):  # from CloudWatch, through the SDK
        assert f"<stdout>:rank {rank} of 4 on algo-{host}" in out, out[-4000:]
    assert "Running MPI Driver" in out and "Master can connect to all worker nodes." in out


@pytest.mark.parametrize("sdk", ["v2", "v3"])
def test_a_failed_rank_fails_the_job_with_the_drivers_text(
    serve: ServeProcess, tmp_path: Path, guard: dict[str, str], sdk: str
) -> None:
    done = _train(serve, tmp_path, guard, sdk, "fails.py")
    out = done.stdout + done.stderr
    assert done.returncode == 7, out[-4000:]
    raised = next(line for line in done.stdout.splitlines() if line.startswith("RAISED"))
    # FailureReason: algo-1's /opt/ml/output/failure, the driver's own text
    assert "Traceback (most recent call last):" in raised, raised
    assert "subprocess.CalledProcessError: Command '['mpirun', '--host'" in out, raised
    assert "rank three is broken" in out
    assert "smmpi: rank 3 (algo-2) failed: RuntimeError: rank three is broken" in "\n".join(
        serve.lines
    )


@pytest.mark.parametrize("sdk", ["v2", "v3"])
def test_the_drivers_per_node_np_completes_with_its_ranks_as_on_sagemaker(
    serve: ServeProcess, tmp_path: Path, guard: dict[str, str], sdk: str
) -> None:
    """``MPI(process_count_per_node=2)`` alone: the driver's ``-np 2`` starts 2 ranks on
    algo-1, and the job completes, as on SageMaker; smmpi's line on the short world and its
    fix is in algo-1's log stream, the job's record in serve, and ``smmpi status``."""
    done = _train(serve, tmp_path, guard, sdk, "world.py", more="")
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-4000:]
    assert "STATUS Completed" in done.stdout
    ranks = sorted(
        ln.split("<stdout>:", 1)[1].strip() for ln in out.splitlines() if "<stdout>:rank" in ln
    )
    assert ranks == ["rank 0 of 2 on algo-1", "rank 1 of 2 on algo-1"], out[-4000:]
    assert SHORT in out, out[-4000:]  # the job's log, through CloudWatch and the SDK
    sm = serve.client("sagemaker")
    summaries = sm.list_training_jobs(NameContains=f"mt-{sdk}", MaxResults=100)
    name = max(
        (j["CreationTime"], j["TrainingJobName"]) for j in summaries["TrainingJobSummaries"]
    )[1]
    streams = log_lines(serve, name)
    (algo1,) = (lines for stream, lines in streams.items() if stream.startswith(f"{name}/algo-1-"))
    assert f"smmpi: {SHORT}" in algo1
    record = read_json(serve.state / "jobs" / f"{name}.json")
    assert record["_ShortWorld"] == SHORT and "FailureReason" not in record
    status = run_checked(["status", name], {**serve.env, **guard})
    assert status.returncode == 0, status.stderr
    assert f"world      {SHORT}" in status.stdout.splitlines(), status.stdout
