"""Every ``SMMPI_*`` variable is checked before a command works: one line naming it."""

from __future__ import annotations

from pathlib import Path

import pytest

from smmpi.errors import BadInput
from smmpi.ops.settings import check_settings

SETTINGS = (
    "SMMPI_LOCAL_JOBS_KEEP", "SMMPI_LOCAL_JOBS", "SMMPI_ISOLATION", "SMMPI_ROLE",
    "SMMPI_BUCKET", "SMMPI_REGION", "SMMPI_GPUS", "SMMPI_MPIRUN",
)  # fmt: skip


@pytest.fixture(autouse=True)
def unset(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in SETTINGS:
        monkeypatch.delenv(name, raising=False)


def test_usable_settings_pass(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    check_settings()
    good = {
        "SMMPI_LOCAL_JOBS_KEEP": "3",
        "SMMPI_LOCAL_JOBS": str(tmp_path / "to-be-made"),
        "SMMPI_ISOLATION": "processes",
        "SMMPI_ROLE": "arn:aws:iam::123456789012:role/smmpi",
        "SMMPI_BUCKET": "my-bucket",
        "SMMPI_REGION": "eu-west-1",
        "SMMPI_GPUS": "0,GPU-1a2b",
        "SMMPI_MPIRUN": "sh",  # any command on PATH
    }
    for name, value in good.items():
        monkeypatch.setenv(name, value)
    check_settings()


@pytest.mark.parametrize(
    ("name", "value", "allowed"),
    [
        ("SMMPI_LOCAL_JOBS_KEEP", "-1", "an integer >= 0 in ASCII digits"),
        ("SMMPI_ISOLATION", "docker", "auto | hosts | processes"),
        ("SMMPI_ROLE", "smmpi-role", "arn:"),
        ("SMMPI_BUCKET", "Bad_Bucket", "bucket"),
        ("SMMPI_REGION", "moon-1", "region"),
        ("SMMPI_GPUS", "0,0", "each once"),
        ("SMMPI_MPIRUN", "/no/such/mpirun", "an mpirun on PATH"),
    ],
)
def test_a_bad_setting_is_one_line_naming_it(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str, allowed: str
) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(BadInput) as refused:
        check_settings()
    line = str(refused.value)
    assert name in line and value in line and allowed in line and "\n" not in line


def test_a_local_jobs_place_that_is_a_file_and_doctors_own_mpirun(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    taken = tmp_path / "a-file"
    taken.write_text("")
    monkeypatch.setenv("SMMPI_LOCAL_JOBS", str(taken))
    with pytest.raises(BadInput, match=r"^invalid SMMPI_LOCAL_JOBS: .*a folder \(this is a file\)"):
        check_settings()
    monkeypatch.delenv("SMMPI_LOCAL_JOBS")
    monkeypatch.setenv("SMMPI_MPIRUN", "/no/such/mpirun")
    check_settings(mpirun=False)  # smmpi doctor reports on it instead
