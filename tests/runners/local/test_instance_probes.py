"""The instance type's hardware as the container's probes see it, and the rank watcher's hook
(runners/local/instance_probes.py)."""

from __future__ import annotations

import json
import multiprocessing
import os
import subprocess
import sys
from pathlib import Path

import pytest

from smmpi.runners.local import instance_probes
from smmpi.runners.local.venvs import cached_venv, site_packages


def _resource_config(tmp_path: Path, instance_type: str) -> str:
    path = tmp_path / "resourceconfig.json"
    path.write_text(json.dumps({"current_host": "algo-1", "current_instance_type": instance_type}))
    return str(path)


def test_counts_are_the_instance_types_from_its_resource_config(tmp_path: Path) -> None:
    counts = instance_probes.instance_counts
    assert counts(_resource_config(tmp_path, "ml.g5.12xlarge")) == (4, 48)
    assert counts(_resource_config(tmp_path, "ml.c5.2xlarge")) == (0, 8)
    assert counts(_resource_config(tmp_path, "local")) == (0, None)  # vCPUs: not in its name


def test_no_readable_resource_config_gives_no_counts(tmp_path: Path) -> None:
    assert instance_probes.instance_counts(str(tmp_path / "absent.json")) is None
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    assert instance_probes.instance_counts(str(broken)) is None
    (tmp_path / "other.json").write_text(json.dumps({"current_host": "algo-1"}))
    assert instance_probes.instance_counts(str(tmp_path / "other.json")) is None


@pytest.fixture
def probes_restored(monkeypatch: pytest.MonkeyPatch) -> None:
    """:func:`instance_probes.answer` replaces this process's probes: put them back after."""
    monkeypatch.setattr(subprocess, "check_output", subprocess.check_output)
    monkeypatch.setattr(os, "cpu_count", os.cpu_count)


@pytest.mark.usefixtures("probes_restored")
def test_a_gpu_instances_probes_count_its_gpus_and_vcpus() -> None:
    """sagemaker-training counts the lines of ``nvidia-smi --list-gpus`` and takes
    ``multiprocessing.cpu_count()``."""
    instance_probes.answer(4, 48)
    listed = subprocess.check_output(["nvidia-smi", "--list-gpus"]).decode("utf-8")
    assert len(listed.splitlines()) == 4
    assert listed.splitlines()[0].startswith("GPU 0: ")
    assert multiprocessing.cpu_count() == 48
    # any other command still runs for real
    assert subprocess.check_output(["echo", "real"]) == b"real\n"


@pytest.mark.usefixtures("probes_restored")
def test_a_cpu_instance_has_no_nvidia_smi_and_an_unknown_size_keeps_this_machines_cpus() -> None:
    cpus = os.cpu_count()
    instance_probes.answer(0, None)
    with pytest.raises(FileNotFoundError):
        subprocess.check_output(["nvidia-smi", "--list-gpus"])
    assert os.cpu_count() == cpus


def test_the_toolkits_process_reads_the_images_torch_version(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)  # (restored, or removed, after the test)
    instance_probes.image_torch("2.8.0+cpu")
    import torch

    assert torch.__version__ == "2.8.0+cpu"


def _venv_with_rank_hook(tmp_path: Path) -> Path:
    """A venv as exact mode builds the toolkit's: the probes module and the rank hook."""
    probes = {instance_probes.MODULE: instance_probes.source()}
    return cached_venv(
        tmp_path / "venvs",
        "toolkit",
        [site_packages()],
        {"probe": "print('never run')\n"},
        probes,
        instance_probes.rank_startup(),
    )


def test_a_rank_of_the_containers_mpirun_restarts_under_the_rank_watcher(tmp_path: Path) -> None:
    venv_dir = _venv_with_rank_hook(tmp_path)
    watcher = tmp_path / "watch.py"
    watcher.write_text(
        "import json, os, sys\nprint(json.dumps([sys.argv[1:], dict(os.environ)]))\n"
    )
    python = str(venv_dir / "bin" / "python")
    env = {
        "PATH": os.environ["PATH"],
        "OMPI_COMM_WORLD_RANK": "1",
        instance_probes.WATCH: str(watcher),
        instance_probes.HOST_FILE: str(tmp_path / "hosts.json"),
    }
    done = subprocess.run(
        [python, "-c", "print('the rank itself')", "arg"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    argv, seen = json.loads(done.stdout)
    rank = [python, "-c", "print('the rank itself')", "arg"]
    assert argv == ["rank", str(tmp_path / "hosts.json"), "--", *rank]
    # the watcher's own environment, and so the rank's, no longer names it
    assert instance_probes.WATCH not in seen and instance_probes.HOST_FILE not in seen


def test_a_process_that_is_no_rank_or_has_no_host_file_runs_as_it_is(tmp_path: Path) -> None:
    venv_dir = _venv_with_rank_hook(tmp_path)
    watcher = tmp_path / "watch.py"
    watcher.write_text("print('watched')\n")
    python = str(venv_dir / "bin" / "python")
    base = {"PATH": os.environ["PATH"], instance_probes.WATCH: str(watcher)}
    for env in (
        {**base, instance_probes.HOST_FILE: str(tmp_path / "hosts.json")},  # not a rank (pip)
        {**base, "OMPI_COMM_WORLD_RANK": "0"},  # a rank without the host file (smmpi's own)
    ):
        done = subprocess.run(
            [python, "-c", "print('itself')"], env=env, capture_output=True, text=True, timeout=60
        )
        assert (done.returncode, done.stdout) == (0, "itself\n"), done.stderr
