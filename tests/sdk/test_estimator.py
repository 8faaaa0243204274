"""The uploaded source dir: exactly the program's files, packed reproducibly."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest

from smmpi.spec import (
    MPIJob,
)


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for var in ("SMMPI_ROLE", "SMMPI_BUCKET", "SMMPI_REGION"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("SMMPI_CONFIG", str(tmp_path / "none.json"))


def _members(data: bytes) -> list[str]:
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        return sorted(tar.getnames())


def test_packaged_source_dir_is_entry_plus_helpers() -> None:
    from smmpi.sdk.estimator import pack_source

    job = MPIJob("demo", instances=3, ppn=2)
    assert _members(pack_source(job)) == [
        "broadcast.py",
        "demo.py",
        "gather_reduce_broadcast.py",
        "point_to_point.py",
        "smmpi_runtime.py",
    ]
    assert pack_source(job) == pack_source(job)  # reproducible


def test_user_source_dir_excludes_vcs_caches_and_venvs(tmp_path: Path) -> None:
    from smmpi.sdk.estimator import pack_source

    src = tmp_path / "proj"
    for rel in (
        "train.py",
        "lib/util.py",
        ".git/config",
        "__pycache__/train.cpython-311.pyc",
        ".venv/bin/python",
        "venv/lib/x.py",
        "lib/__pycache__/util.cpython-311.pyc",
    ):
        path = src / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x = 1\n")
    job = MPIJob(str(src / "train.py"), source_dir=str(src))
    assert job.program.script == "train.py"
    assert _members(pack_source(job)) == ["lib/util.py", "smmpi_runtime.py", "train.py"]
