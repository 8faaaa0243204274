"""A TensorFlow image's toolkit imports TensorFlow as it starts: in an environment without it
(what ``make demo`` installs), ``--exact`` says so before anything starts, and so does
``smmpi doctor``, with how to install it.

The environment is a real one without TensorFlow: a venv with this checkout's wheel and the
packages a local run needs (tests/nobody.py builds it), run here as root.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.exact.test_toolkit import toolkit_env
from tests.nobody import nobody_venv


@pytest.fixture(scope="module")
def bare_smmpi() -> Iterator[str]:
    """``smmpi`` of a venv without TensorFlow: what ``pip install smmpi`` gives."""
    for venv in nobody_venv():
        yield str(venv / "bin" / "smmpi")


def _run(argv: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300)


def test_exact_with_a_tensorflow_image_and_no_tensorflow_is_one_line_before_anything(
    bare_smmpi: str, tmp_path: Path
) -> None:
    env = toolkit_env(tmp_path)  # the toolkits are named: nothing to build
    for argv in (["run", "demo"], ["run", "demo", "--framework", "tensorflow"]):
        done = _run([bare_smmpi, *argv, "-N", "2", "-n", "1", "--exact"], env)
        assert done.returncode == 2, done.stderr
        lines = done.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith("smmpi: invalid --exact: "), lines
        assert "TensorFlow in smmpi's environment" in lines[0]
        assert "No module named 'tensorflow'" in lines[0]
        assert "pip install tensorflow" in lines[0] and "--framework pytorch" in lines[0]
        assert done.stdout == ""
        assert list((tmp_path / "tmp").iterdir()) == []  # no run folder


def test_doctor_says_the_tensorflow_toolkit_needs_tensorflow(
    bare_smmpi: str, tmp_path: Path
) -> None:
    done = _run([bare_smmpi, "doctor", "--no-smoke"], toolkit_env(tmp_path))
    rows = [ln for ln in done.stdout.splitlines() if ln.split()[1:2] == ["toolkit"]]
    tensorflow = next(ln for ln in rows if "tensorflow:" in ln)
    assert tensorflow.startswith("warn"), rows
    assert "TensorFlow in smmpi's environment" in tensorflow
    assert "fix: pip install tensorflow there, or run a --framework pytorch job" in tensorflow
    pytorch = next(ln for ln in rows if "pytorch:" in ln)
    assert pytorch.startswith("ok"), rows
