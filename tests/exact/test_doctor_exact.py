"""`smmpi doctor` says whether exact mode can run here, and what to install when not."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.helpers import ROOT, base_env

PATCHED = (
    "import sys; from smmpi.instances.hosts import sshd; sshd.SSHD = {sshd!r}; "
    "from smmpi.cli import main; sys.argv[0] = 'smmpi'; main()"
)


def _exact_line(tmp_path: Path, sshd: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", PATCHED.format(sshd=sshd), "doctor", "--no-smoke"],
        capture_output=True,
        text=True,
        env=base_env(tmp_path),
        timeout=120,
    )
    assert "Traceback" not in done.stderr, done.stderr
    return next(line for line in done.stdout.splitlines() if line.split()[1:2] == ["exact"])


def test_exact_mode_available_with_sshd(tmp_path: Path) -> None:
    line = _exact_line(tmp_path, "/usr/sbin/sshd")
    assert line == "ok    exact       --exact: a real sshd on port 22 of every isolated instance"


def test_exact_mode_without_sshd_says_what_to_install(tmp_path: Path) -> None:
    line = _exact_line(tmp_path, "/nonexistent/sbin/sshd")
    assert line.startswith(
        "warn  exact       --exact unavailable: /nonexistent/sbin/sshd not found"
    )
    assert line.endswith(
        "not found; fix: install openssh-server (`make sshd`, or apt-get install openssh-server)"
    )


def _toolkit_lines(tmp_path: Path, **env: str) -> list[str]:
    run_env = base_env(tmp_path)
    for name in ("SMMPI_TOOLKIT_VENV", "SMMPI_TOOLKIT_TF"):
        run_env.pop(name, None)
    done = subprocess.run(
        [sys.executable, "-m", "smmpi.cli", "doctor", "--no-smoke"],
        capture_output=True,
        text=True,
        env=run_env | env,
        timeout=120,
    )
    assert "Traceback" not in done.stderr, done.stderr
    return [line for line in done.stdout.splitlines() if line.split()[1:2] == ["toolkit"]]


def test_doctor_says_the_toolkit_is_not_built_and_how_to_get_it(tmp_path: Path) -> None:
    pytorch, tensorflow = _toolkit_lines(tmp_path)
    assert pytorch == (
        "warn  toolkit     pytorch: sagemaker-training 5.1.4, sagemaker-pytorch-training 3.0.0 "
        "not built yet: the first --exact run of a pytorch image builds it with pip, once; "
        "fix: run it once where PyPI (or pip's index) is reachable, or name a built one in "
        "SMMPI_TOOLKIT_VENV"
    )
    assert tensorflow.startswith(
        "warn  toolkit     tensorflow: sagemaker-training 4.8.3, sagemaker-tensorflow-training "
        "20.5.0 not built yet"
    )
    assert not (tmp_path / "home" / ".smmpi").exists()  # doctor builds nothing


def test_doctor_names_the_toolkit_it_would_use(tmp_path: Path) -> None:
    venv = os.environ.get("SMMPI_TOOLKIT_VENV") or str(ROOT / ".venv-toolkit")
    lines = _toolkit_lines(tmp_path, SMMPI_TOOLKIT_VENV=venv)
    assert lines[0] == "ok    toolkit     pytorch: sagemaker-training 5.1.4 from SMMPI_TOOLKIT_VENV"
    bad = _toolkit_lines(tmp_path, SMMPI_TOOLKIT_VENV=str(tmp_path))
    assert bad[0].startswith(f"warn  toolkit     pytorch: invalid SMMPI_TOOLKIT_VENV: '{tmp_path}'")
    off = _toolkit_lines(tmp_path, SMMPI_TOOLKIT_VENV="none")
    sshd_only = "SMMPI_TOOLKIT_VENV=none: sshd and the container's mpirun line, no toolkit"
    assert off == [f"ok    toolkit     {fw}: {sshd_only}" for fw in ("pytorch", "tensorflow")]
