"""Another real package's own example, unchanged: mpipool's README ``MPIExecutor`` example.

Taken from mpipool's sdist (the installed version), run under plain mpirun and under
``smmpi run -N 2 -n 2`` in both modes: rank 0 prints the 100 results its three workers
computed (``i ** worker rank``).
"""

from __future__ import annotations

import ast
import importlib.metadata
import re
import subprocess
from pathlib import Path

import pytest

from tests.compat.conftest import ROOT, fetch_sdist, plain_mpirun
from tests.compat.test_mpi4py_demos import normalised
from tests.helpers import BIN

#: plain mpirun (up to 300 s) and smmpi (up to 400 s): over the suite-wide 300 s on a loaded machine
pytestmark = pytest.mark.timeout(900)


def readme_example(source: Path) -> str:
    """The README's first complete MPIExecutor program that submits jobs and prints them."""
    blocks = re.findall(r"```python\n(.*?)```", (source / "README.md").read_text(), re.S)
    return str(next(b for b in blocks if "pool.submit(" in b and "print(" in b))


def _results(stdout: str) -> list[int]:
    lines = normalised(stdout)
    assert sorted(lines) == [0], lines  # only the main process prints
    (text,) = [line for line in lines[0] if line.startswith("[")]
    values: list[int] = ast.literal_eval(text)
    return values


def _check(values: list[int]) -> None:
    assert len(values) == 100
    assert all(v in {i**r for r in (1, 2, 3)} for i, v in enumerate(values)), values


@pytest.mark.parametrize("mode", ["hosts", "processes"])
def test_mpipool_readme_example(compat_env: dict[str, str], tmp_path: Path, mode: str) -> None:
    version = importlib.metadata.version("mpipool")
    source = fetch_sdist("mpipool", version, ROOT / ".pytest_cache" / "compat")
    code = tmp_path / "code"
    code.mkdir()
    (code / "example.py").write_text(readme_example(source), encoding="utf-8")
    plain = subprocess.run(
        [*plain_mpirun(4), "python", "example.py"],
        cwd=code,
        env=compat_env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert plain.returncode == 0, plain.stderr[-2000:]
    _check(_results(plain.stdout))
    args = ["run", "example.py", "--source-dir", ".", "-N", "2", "-n", "2", "--timeout", "300"]
    r = subprocess.run(
        [str(BIN / "smmpi"), *args, "--framework", "pytorch"],
        cwd=code,
        env={**compat_env, "SMMPI_ISOLATION": mode},
        capture_output=True,
        text=True,
        timeout=400,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    _check(_results(r.stdout))
