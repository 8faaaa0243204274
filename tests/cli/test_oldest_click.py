"""The CLI on the oldest click that pyproject.toml allows (a GPU image's Python had click 8.1,
where ``click.exceptions.NoArgsIsHelpError`` does not exist and every command failed with an
AttributeError)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import ROOT


@pytest.fixture(scope="module")
def oldest_click(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    """The lowest click version pyproject.toml allows, installed alone into a folder of its own
    (put first on PYTHONPATH, it shadows the venv's newer click)."""
    version = re.findall(r'"click>=([\d.]+)"', (ROOT / "pyproject.toml").read_text())[0]
    folder = tmp_path_factory.mktemp("click")
    pip = [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(folder)]
    subprocess.run([*pip, f"click=={version}"], check=True, capture_output=True, timeout=300)
    return version, folder


def _smmpi(
    oldest: tuple[str, Path], env: dict[str, str], *args: str
) -> subprocess.CompletedProcess[str]:
    code = "import click, sys; print('CLICK', click.__version__, file=sys.stderr)\n"
    code += "from smmpi.cli import main; sys.argv[0] = 'smmpi'; main()"
    env = {**env, "PYTHONPATH": f"{oldest[1]}:{ROOT}"}
    return subprocess.run(
        [sys.executable, "-c", code, *args], env=env, capture_output=True, text=True, timeout=120
    )


def test_the_cli_answers_as_on_the_newest_click(
    oldest_click: tuple[str, Path], env: dict[str, str]
) -> None:
    bare = _smmpi(oldest_click, env)
    assert f"CLICK {oldest_click[0]}" in bare.stderr, bare.stderr  # that click, not the venv's
    assert (bare.returncode, "Usage:" in bare.stdout) == (0, True), bare.stderr
    bad = _smmpi(oldest_click, env, "run", "demo", "-N", "0")
    assert (bad.returncode, bad.stderr.splitlines()[1:]) == (
        2,
        ["smmpi: invalid instances: 0; allowed: an integer >= 1"],
    ), bad.stderr
    unknown = _smmpi(oldest_click, env, "run", "demo", "--isolation", "bogus")
    assert unknown.returncode == 2 and "--isolation" in unknown.stderr, unknown.stderr
    version = _smmpi(oldest_click, env, "--version")
    assert version.returncode == 0 and "version" in version.stdout, version.stderr
