"""smmpi builds the image's toolkit itself on first use, caches it, and reuses it.

The build test installs sagemaker-training 5.1.4 with sagemaker-pytorch-training 3.0.0 from
PyPI into a fresh HOME (pip's own cache is this machine's, so a second run of the suite
downloads nothing), then runs a PyTorch job with it: about a minute for the build, and the
toolkit's own waits for the job.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from smmpi.runners.local import toolkit_build, toolkits
from tests.helpers import base_env, free_port, processes_left, smmpi, write

# One write per line: the image sets PYTHONUNBUFFERED, so print's arguments would reach mpirun
# as separate writes, and Open MPI tags each piece it reads (a line split in two, as on SageMaker)
PROGRAM = (
    "import importlib.metadata, os, sys\nfrom mpi4py import MPI\n"
    "sys.stdout.write(' '.join(['toolkit', str(MPI.COMM_WORLD.Get_rank()), "
    "importlib.metadata.version('sagemaker-training'), "
    "os.environ['SM_FRAMEWORK_MODULE']]) + '\\n')\n"
)


def _env(tmp_path: Path) -> dict[str, str]:
    env = base_env(tmp_path)  # no SMMPI_TOOLKIT_VENV: smmpi builds its own
    (tmp_path / "tmp").mkdir()
    env.pop("SMMPI_ISOLATION", None)
    cache = os.environ.get("PIP_CACHE_DIR", str(Path("/root/.cache/pip")))
    return {**env, "TMPDIR": str(tmp_path / "tmp"), "PIP_CACHE_DIR": cache}


@pytest.mark.timeout(900)  # the build and run may take their 600 s on a loaded machine
def test_exact_mode_builds_the_toolkit_once_and_reuses_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    program = write(tmp_path / "which.py", PROGRAM)
    argv = ["run", str(program), "-N", "2", "-n", "1", "--exact", "--framework", "pytorch"]
    done = smmpi(argv, _env(tmp_path), timeout=600)
    assert done.returncode == 0, done.stderr
    root = tmp_path / "home" / ".smmpi" / "toolkits"
    built = root / "pytorch-sagemaker-training-5.1.4-py3.11-"
    [folder] = [p for p in root.iterdir() if p.name.startswith(built.name)]
    lines = done.stderr.splitlines()
    assert lines[0] == (
        "smmpi: exact mode: building the pytorch images' toolkit (sagemaker-training 5.1.4, "
        f"sagemaker-pytorch-training 3.0.0) in {folder}, once: pip install, at most 600 s"
    )
    assert f"toolkit's `train` (5.1.4, from smmpi's build in {folder})" in done.stderr
    assert sorted(
        ln.split("]<stdout>:")[1] for ln in done.stdout.splitlines() if "toolkit" in ln
    ) == [
        "toolkit 0 5.1.4 sagemaker_pytorch_container.training:main",
        "toolkit 1 5.1.4 sagemaker_pytorch_container.training:main",
    ]
    for path in (root.parent, root, folder):
        assert stat.S_IMODE(path.stat().st_mode) == 0o700, path
    assert not list(root.glob(".building-*"))
    assert processes_left(str(tmp_path)) == []
    # the next run finds it: nothing to build, nothing changed
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("SMMPI_TOOLKIT_VENV", raising=False)
    monkeypatch.delenv("SMMPI_TOOLKIT_TF", raising=False)
    said: list[str] = []
    toolkit_build.ensure("", said.append)
    assert said == []
    assert toolkits.sources("") == (folder / "site",)


def test_a_build_without_network_is_one_line_and_leaves_nothing(tmp_path: Path) -> None:
    env = _env(tmp_path) | {
        "PIP_CONFIG_FILE": os.devnull,  # none of this machine's indexes or wheel folders
        "PIP_INDEX_URL": f"http://127.0.0.1:{free_port()}/simple",
        "PIP_CACHE_DIR": str(tmp_path / "empty-cache"),
    }
    env.pop("PIP_FIND_LINKS", None)
    env.pop("PIP_EXTRA_INDEX_URL", None)
    done = smmpi(["run", "demo", "-N", "2", "-n", "1", "--exact"], env, timeout=300)
    assert done.returncode == 1, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 2, done.stderr
    assert lines[0].startswith("smmpi: exact mode: building the tensorflow images' toolkit")
    assert lines[1].startswith("smmpi: exact mode: building the toolkit's environment failed: ")
    assert "nothing was kept" in lines[1]
    root = tmp_path / "home" / ".smmpi" / "toolkits"
    assert list(root.iterdir()) == []  # no half-built environment
    assert list((tmp_path / "tmp").iterdir()) == []  # and no run folder
