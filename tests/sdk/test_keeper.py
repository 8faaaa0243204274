"""The keeper of the imported SDK: started by the first command that asks for it, one per
Python, smmpi and SDK; it holds no credentials, ends when idle, at ``end``, when its socket goes,
and at ``smmpi run --keep-warm 0``; a killed one is replaced by the next command."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from smmpi import keepers
from smmpi.sdk import warm
from tests.helpers import base_env, smmpi


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    where = tmp_path / "warm"
    monkeypatch.setenv("SMMPI_WARM_DIR", str(where))
    yield where
    for path in where.glob("sdk/*.sock"):
        keepers.tell(path)


def _keeper(seconds: int) -> int:
    """The keeper's process id (one is started if there is none)."""
    with warm.connect(seconds) as sock:
        return keepers.peer_pid(sock)


def _gone(pid: int, within: float = 15.0) -> bool:
    """Whether ``pid`` ended (and is reaped, if this process started it: a killed process's
    socket listens on until then)."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            if os.waitpid(pid, os.WNOHANG)[0] == pid:
                return True
        except ChildProcessError:  # another's child: its parent reaps it
            if not os.path.exists(f"/proc/{pid}"):
                return True
            with open(f"/proc/{pid}/stat") as stat:
                if stat.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return True
        time.sleep(0.1)
    return False


def test_one_keeper_is_started_and_found_again(folder: Path) -> None:
    pid = _keeper(60)
    assert _keeper(60) == pid
    (sock,) = (folder / "sdk").glob("sdk-*.sock")
    assert sock.name == f"{warm.key()}.sock"
    assert oct(sock.stat().st_mode & 0o777) == "0o600"
    assert oct((folder / "sdk").stat().st_mode & 0o777) == "0o700"


def test_the_keeper_holds_no_credentials_and_no_working_folder(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAKEEPERTEST0000")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "keeper-secret-never-kept")
    monkeypatch.setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", "http://127.0.0.1:1/creds")
    pid = _keeper(60)
    environ = Path(f"/proc/{pid}/environ").read_bytes()
    assert b"AWS_ACCESS_KEY_ID" not in environ and b"keeper-secret" not in environ
    assert b"AWS_CONTAINER_" not in environ
    assert os.readlink(f"/proc/{pid}/cwd") == "/"
    assert os.getsid(pid) == pid  # a session of its own: no terminal's signal reaches it


def test_the_keeper_ends_when_idle(folder: Path) -> None:
    pid = _keeper(1)
    assert _gone(pid)
    assert not list((folder / "sdk").glob("*.sock"))


def test_the_keeper_ends_when_told_or_when_its_socket_goes(folder: Path) -> None:
    pid = _keeper(60)
    (sock,) = (folder / "sdk").glob("*.sock")
    assert keepers.tell(sock)
    assert _gone(pid) and not sock.exists()
    pid = _keeper(60)
    sock.unlink()
    assert _gone(pid)


def test_a_killed_keeper_is_replaced_by_the_next_command(folder: Path) -> None:
    pid = _keeper(60)
    os.kill(pid, signal.SIGKILL)
    assert _gone(pid)
    (sock,) = (folder / "sdk").glob("*.sock")  # what it left
    again = _keeper(60)
    assert again != pid and sock.exists()


def test_keep_warm_0_ends_the_kept_sdk_too(folder: Path, tmp_path: Path) -> None:
    pid = _keeper(60)
    env = {**base_env(tmp_path), "SMMPI_WARM_DIR": str(folder)}
    done = smmpi(["run", "--keep-warm", "0"], env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert _gone(pid)
