"""The cached venvs of exact mode's toolkit and ModelTrainer's driver (runners/local/venvs.py)."""

from __future__ import annotations

import subprocess
import venv
from pathlib import Path

import pytest

from smmpi.runners.local.venvs import cached_venv


def test_a_venv_is_built_once_and_runs_its_script(tmp_path: Path) -> None:
    root = tmp_path / "venvs"
    made = cached_venv(root, "probe", [str(tmp_path)], {"hello": "print('hello')\n"})
    again = cached_venv(root, "probe", [str(tmp_path)], {"hello": "print('hello')\n"})
    assert made == again
    done = subprocess.run([made / "bin" / "hello"], capture_output=True, text=True, check=True)
    assert done.stdout == "hello\n"
    assert sorted(p.name for p in root.iterdir()) == [made.name]
    assert root.stat().st_mode & 0o777 == 0o700


@pytest.mark.parametrize("stop", [KeyboardInterrupt, OSError])
def test_an_interrupted_or_failed_build_leaves_no_half_venv(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stop: type[BaseException]
) -> None:
    """Ctrl-C (or a full disk) while the venv is made: its temporary folder goes with it, and
    the next run builds it whole."""
    root = tmp_path / "venvs"
    real_create = venv.EnvBuilder.create

    def create_then_stop(self: venv.EnvBuilder, env_dir: str) -> None:
        real_create(self, env_dir)
        raise stop()

    monkeypatch.setattr(venv.EnvBuilder, "create", create_then_stop)
    with pytest.raises(stop):
        cached_venv(root, "probe", [], {"hello": "print('hello')\n"})
    assert list(root.iterdir()) == []
    monkeypatch.setattr(venv.EnvBuilder, "create", real_create)
    made = cached_venv(root, "probe", [], {"hello": "print('hello')\n"})
    assert (made / "bin" / "hello").is_file()
