"""The user's config file: precedence, checks of what it holds, and a safe save."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from smmpi import config
from smmpi.bounded import FileRefused
from smmpi.errors import BadInput


@pytest.fixture
def file(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    for name in config.ENV_OF.values():
        monkeypatch.delenv(name, raising=False)
    where = tmp_path / "smmpi" / "config.json"
    monkeypatch.setenv("SMMPI_CONFIG", str(where))
    return where


def test_where_the_file_is(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("SMMPI_CONFIG", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    assert config.path() == tmp_path / "xdg" / "smmpi" / "config.json"
    monkeypatch.setenv("SMMPI_CONFIG", "~/mine.json")
    assert config.path() == Path("~/mine.json").expanduser()


def test_a_flag_beats_the_variable_which_beats_the_file(
    file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert config.load() == {} and config.setting("bucket") is None
    config.save({"bucket": "from-file", "stack": "smmpi"})
    assert config.setting("bucket") == "from-file"
    monkeypatch.setenv("SMMPI_BUCKET", "from-env")
    assert config.setting("bucket") == "from-env"
    assert config.setting("bucket", "from-flag") == "from-flag"
    config.save({"stack": None})
    assert config.load() == {"bucket": "from-file"}


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("[1]", "a JSON list, not an object"),
        ('{"role": 5}', "'role' is 5, not a string"),
        ('{"region": " "}', "an empty string (remove the key)"),
        ('{"subnets": "subnet-1"}', "not a list of strings"),
        ('{"role": ', "not valid JSON (line 1)"),
    ],
)
def test_a_broken_file_is_one_line_naming_it(file: Path, text: str, problem: str) -> None:
    file.parent.mkdir(parents=True)
    file.write_text(text)
    with pytest.raises(config.ConfigError) as broken:
        config.load()
    line = str(broken.value)
    assert line.startswith(f"invalid config file {file}: ") and problem in line
    assert broken.value.exit_code == 2


def test_a_link_that_leads_nowhere_is_broken_and_save_never_writes_through_a_link(
    file: Path, tmp_path: Path
) -> None:
    file.parent.mkdir(parents=True)
    file.symlink_to(tmp_path / "nowhere.json")
    with pytest.raises(config.ConfigError):
        config.load()
    file.unlink()
    victim = tmp_path / "victim"
    victim.write_text("the user's")
    file.with_suffix(".tmp").symlink_to(victim)
    with pytest.raises(FileRefused, match="a link"):
        config.save({"bucket": "b"})
    assert victim.read_text() == "the user's" and not file.exists()


def test_home_comes_from_the_password_database_when_unset(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("HOME")
    config.ensure_home()
    assert os.environ["HOME"] and Path(os.environ["HOME"]).is_absolute()


def test_no_home_at_all_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    import pwd

    monkeypatch.delenv("HOME")

    def unknown(uid: int) -> pwd.struct_passwd:
        raise KeyError(uid)

    monkeypatch.setattr(pwd, "getpwuid", unknown)
    with pytest.raises(BadInput, match=r"^invalid HOME: '\(unset\)'; allowed: a home folder"):
        config.ensure_home()
