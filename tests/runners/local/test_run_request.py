"""`smmpi run` gives the ranks what the default estimator's request would: the same
hyperparameters as `submit --local`, the region included, and the variables they make."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import smmpi


def _dumps(done: Any) -> dict[int, dict[str, str]]:
    """What every rank dumped, from the kept host trees (which are then removed)."""
    kept = Path(done.stderr.split("host trees kept under ", 1)[1].split()[0])
    files = kept.glob("algo-*/opt/ml/model/rank-*.json")
    dumps = {int(p.stem.split("-")[1]): json.loads(p.read_text()) for p in files}
    shutil.rmtree(kept)
    return dumps


DUMP = """\
import json, os
from mpi4py import MPI

rank = MPI.COMM_WORLD.Get_rank()
# into the rank's own model dir (an isolated instance's /tmp is not this machine's)
with open(os.path.join(os.environ["SM_MODEL_DIR"], f"rank-{rank}.json"), "w") as f:
    json.dump(dict(os.environ), f)
"""


def test_run_writes_the_hyperparameters_submit_sends(tmp_path: Path, env: dict[str, str]) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / "dump.py").write_text(DUMP, encoding="utf-8")
    run_env = {**env, "AWS_REGION": "eu-west-1", "SMMPI_BUCKET": "my-bucket"}
    args = ["run", str(src / "dump.py"), "-N", "2", "-n", "1", "--keep"]
    done = smmpi(args, run_env)
    assert done.returncode == 0, done.stderr
    kept = Path(done.stderr.split("host trees kept under ", 1)[1].split()[0])
    config = kept / "algo-2" / "opt" / "ml" / "input" / "config"
    hps = json.loads((config / "hyperparameters.json").read_text())
    dumps = _dumps(done)
    plan = smmpi(
        ["submit", str(src / "dump.py"), "-N", "2", "-n", "1", "--dry-run", "--json"], run_env
    )
    assert plan.returncode == 0, plan.stderr
    sent = json.loads(plan.stdout)["request"]["HyperParameters"]
    assert sorted(hps) == sorted(sent)
    assert (
        json.loads(hps["sagemaker_region"]) == json.loads(sent["sagemaker_region"]) == "eu-west-1"
    )
    code = json.loads(hps["sagemaker_submit_directory"])
    assert code.startswith("s3://my-bucket/smmpi-run-dump/source/")
    assert code.endswith("/sourcedir.tar.gz")
    for rank in (0, 1):
        seen = dumps[rank]
        assert seen["SAGEMAKER_REGION"] == seen["S3_REGION"] == "eu-west-1"
        assert seen["SM_MODULE_DIR"] == code
        assert json.loads(seen["SM_TRAINING_ENV"])["module_dir"] == code


def test_run_without_a_region_shows_the_submit_fallback(
    tmp_path: Path, env: dict[str, str]
) -> None:
    """No region configured: ranks see the region a dry run shows (us-east-1), not an empty one."""
    script = tmp_path / "region.py"
    code = (
        "import os\nfrom mpi4py import MPI\nprint('REGION', repr(os.environ['SAGEMAKER_REGION']))\n"
    )
    script.write_text(code, encoding="utf-8")
    done = smmpi(["run", str(script), "-N", "1", "-n", "1"], env)
    assert done.returncode == 0, done.stderr
    assert "REGION 'us-east-1'" in done.stdout


@pytest.mark.own_mode
@pytest.mark.parametrize("mode", ["processes", "hosts"])
def test_no_locale_of_smmpis_own_reaches_the_ranks(
    mode: str, tmp_path: Path, env: dict[str, str]
) -> None:
    """In the container ranks have the image's LC_ALL and no LC_CTYPE; here a Python started
    without a locale (smmpi's own watcher) would coerce one and pass LC_CTYPE=C.UTF-8 on."""
    script = tmp_path / "dump.py"
    script.write_text(DUMP, encoding="utf-8")
    bare = {k: v for k, v in env.items() if k not in ("LANG", "LC_ALL", "LC_CTYPE")}
    args = ["run", str(script), "-N", "2", "-n", "1", "--isolation", mode, "--keep"]
    done = smmpi(args, bare)
    assert done.returncode == 0, done.stderr
    dumps = _dumps(done)
    for rank in (0, 1):
        seen = dumps[rank]
        assert "LC_CTYPE" not in seen
        assert seen["LC_ALL"] == seen["LANG"] == "C.UTF-8"


@pytest.mark.own_mode
def test_efa_variables_reach_the_ranks_as_the_toolkit_gives_them(
    tmp_path: Path, env: dict[str, str]
) -> None:
    """README: on an EFA instance type the ranks get the toolkit's FI_*/NCCL_PROTO here too."""
    script = tmp_path / "dump.py"
    script.write_text(DUMP, encoding="utf-8")
    args = ["run", str(script), "-N", "2", "-n", "1", "--instance-type", "ml.p4d.24xlarge"]
    args += ["--isolation", "processes", "--keep"]
    done = smmpi(args, env)
    assert done.returncode == 0, done.stderr
    dumps = _dumps(done)
    for rank in (0, 1):
        seen = dumps[rank]
        efa = (seen["FI_PROVIDER"], seen["NCCL_PROTO"], seen["FI_EFA_USE_DEVICE_RDMA"])
        assert efa == ("efa", "simple", "1")


def test_the_dry_run_table_keeps_the_efa_settings() -> None:
    from smmpi.runners.local.translate import translate

    rows = translate(
        ["mpirun", "-x", "FI_PROVIDER=efa", "-x", "NCCL_PROTO=simple", "python", "x.py"]
    )
    efa = [r for r in rows if r.container[:1] == ("-x",)]
    assert [r.local for r in efa] == [("-x", "FI_PROVIDER=efa"), ("-x", "NCCL_PROTO=simple")]
