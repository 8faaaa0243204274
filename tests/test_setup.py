"""`make demo` on the oldest Python the project runs on here: Debian 12's own python3 (3.11.2),
and a code package's setup.py installed by a local job in the venv it builds (a fresh
``python -m venv`` with ``pip install -e '.[aws]'``), as the container's ``pip install .`` does."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from tests.helpers import ROOT, base_env
from tests.oracle.matrix import package_source

DEBIAN_PYTHON = "/usr/bin/python3"


def test_make_demo_with_debians_python(tmp_path: Path) -> None:
    version = subprocess.run(
        [DEBIAN_PYTHON, "-c", "import sys; print(*sys.version_info[:3])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert tuple(map(int, version)) < (3, 11, 4), (
        f"{DEBIAN_PYTHON} is {version}: it no longer tests an old one"
    )
    env = base_env(tmp_path)
    env["PATH"] = "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"  # not this venv's
    venv = tmp_path / "venv"
    done = subprocess.run(
        [
            shutil.which("make") or "make",
            "-C",
            str(ROOT),
            "demo",
            f"PYTHON={DEBIAN_PYTHON}",
            f"VENV={venv}",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "demo: all 6 ranks verified their results" in done.stdout
    assert "Completed" in done.stderr + done.stdout
    assert (venv / "bin" / "python3").resolve().is_relative_to("/usr/bin")
    _setup_py_installs_in(venv / "bin", env, tmp_path)


def _setup_py_installs_in(bin_dir: Path, env: dict[str, str], tmp_path: Path) -> None:
    src = package_source(tmp_path)
    jobs = tmp_path / "jobs"
    run_env = {**env, "SMMPI_LOCAL_JOBS": str(jobs), "PATH": f"{bin_dir}:{env['PATH']}"}
    args = [str(bin_dir / "smmpi"), "submit", str(src / "train.py"), "--source-dir", str(src)]
    args += ["-N", "2", "-n", "1", "--framework", "pytorch", "--local", "--job-name", "pkg"]
    done = subprocess.run(args, env=run_env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert sorted(ln.split(">:", 1)[1] for ln in done.stdout.splitlines() if "MOD" in ln) == [
        "MOD train 0",
        "MOD train 1",
    ]
    assert (jobs / "pkg" / "site-packages" / "trainpkg-1.0.dist-info").is_dir()
