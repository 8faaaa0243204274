"""AWS's variables and files, checked before any session: one line naming each, a credential's
value never shown."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from smmpi.aws.environment import FILE_CAP, BadSetting, check_endpoint_url, check_environment
from smmpi.errors import BadInput


@pytest.fixture
def clean(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No AWS variable of this shell; config and credentials files that do not exist yet."""
    for name in list(os.environ):
        if name.startswith("AWS_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "credentials"))
    return tmp_path


def test_what_botocore_can_use_passes(clean: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    check_environment()
    (clean / "config").write_text("[profile lab]\nregion = eu-west-1\n")
    monkeypatch.setenv("AWS_PROFILE", "lab")
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:5000")
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", "https://s3.example:8443/")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing-secret/+=")
    check_environment()


def test_a_credential_with_a_line_break_is_refused_without_showing_it(
    clean: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing-secret\nmore")
    with pytest.raises(BadSetting) as refused:
        check_environment()
    line = str(refused.value)
    assert line.startswith("invalid AWS_SECRET_ACCESS_KEY: it holds a line break")
    assert "testing-secret" not in line and refused.value.exit_code == 2


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        ("127.0.0.1:5000", "127.0.0.1:5000"),
        ("ftp://host", "ftp://host"),
        ("http://", "http://"),
        ("http://host:70000", "http://host:70000"),
        ("http://user:pw@host bad", "http://***@host bad"),
    ],
)
def test_an_endpoint_botocore_cannot_send_to_is_one_line(value: str, shown: str) -> None:
    with pytest.raises(BadInput) as refused:
        check_endpoint_url("AWS_ENDPOINT_URL", value)
    assert str(refused.value).startswith(f"invalid AWS_ENDPOINT_URL: {shown!r}; allowed: an http")
    assert "pw" not in str(refused.value)


def test_a_config_file_must_be_a_small_ini_file(clean: Path) -> None:
    config = clean / "config"
    config.mkdir()
    with pytest.raises(BadInput, match=r"^invalid AWS_CONFIG_FILE: .*a regular file"):
        check_environment()
    config.rmdir()
    config.write_text("[default\nregion")
    with pytest.raises(BadInput, match=r"an INI file as `aws configure` writes it"):
        check_environment()
    config.write_text("[default]\n" + "#" * FILE_CAP)
    with pytest.raises(BadInput, match=r"a file of at most 1024 KiB"):
        check_environment()


def test_a_profile_that_is_not_there_names_those_that_are(
    clean: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (clean / "credentials").write_text("[default]\naws_access_key_id = testing\n")
    monkeypatch.setenv("AWS_PROFILE", "lab")
    with pytest.raises(BadInput, match=r"^invalid AWS_PROFILE: 'lab'; .*\(default\)$"):
        check_environment()
