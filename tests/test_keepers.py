"""What every keeper stands on: a folder of this user's only, sockets found or found stale, the
first line a client sends. (The keepers themselves: tests/instances/hosts/test_warm.py,
tests/sdk/test_keeper.py.)"""

from __future__ import annotations

import os
import socket
import sys
import threading
from pathlib import Path

import pytest

from smmpi import keepers


@pytest.fixture
def warm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SMMPI_WARM_DIR", str(tmp_path / "warm"))
    return tmp_path / "warm"


def test_the_folder_is_made_0700_and_one_that_is_not_the_users_only_is_refused(
    warm: Path, tmp_path: Path
) -> None:
    assert keepers.folder(sub="sdk") == warm / "sdk"
    assert oct(warm.stat().st_mode & 0o777) == oct((warm / "sdk").stat().st_mode & 0o777) == "0o700"
    (warm / "sdk").chmod(0o755)
    with pytest.raises(keepers.Refused, match="0700, not a link"):
        keepers.folder(sub="sdk")
    (warm / "sdk").rmdir()
    (tmp_path / "elsewhere").mkdir(mode=0o700)
    (warm / "sdk").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(keepers.Refused, match="0700, not a link"):
        keepers.folder(sub="sdk")
    assert not list((tmp_path / "elsewhere").iterdir())


def test_a_socket_found_stale_is_removed_and_a_file_is_left_alone(warm: Path) -> None:
    where = keepers.folder()
    stale = keepers.listen(str(where), "gone.sock")
    stale.close()  # nobody listens any more
    assert keepers.connect(where / "gone.sock") is None
    assert not (where / "gone.sock").exists()
    assert keepers.connect(where / "none.sock") is None
    (where / "plain.sock").write_text("not a socket")
    with pytest.raises(keepers.Refused, match="not a keeper's socket"):
        keepers.connect(where / "plain.sock")
    assert (where / "plain.sock").read_text() == "not a socket"


def test_a_client_is_found_by_a_long_path_and_says_its_first_line(
    warm: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    deep = Path(str(warm) + "/" + "d" * 100 + "/" + "e" * 100)  # longer than a socket's path
    monkeypatch.setenv("SMMPI_WARM_DIR", str(deep))
    where = keepers.folder()
    listener = keepers.listen(str(where), "k.sock")
    heard: list[str] = []

    def serve() -> None:
        conn, _ = listener.accept()
        with conn:
            heard.append(keepers.asked(conn))
            assert keepers.peer_pid(conn) == os.getpid()
            conn.sendall(b"ended\n")

    server = threading.Thread(target=serve)
    server.start()
    assert keepers.tell(where / "k.sock", "keep 5")
    server.join(10)
    listener.close()
    assert heard == ["keep 5"]


def test_a_keeper_that_never_says_ok_is_refused_in_one_line(warm: Path) -> None:
    argv = [sys.executable, "-c", "import os, sys; os.write(int(sys.argv[1]), b'no room')"]
    with pytest.raises(keepers.Refused) as refused:
        keepers.start(argv, {}, "test-keeper")
    assert str(refused.value) == "the keeper of test-keeper did not start: no room"


def test_peer_uid_is_this_users(warm: Path) -> None:
    left, right = socket.socketpair()
    with left, right:
        assert keepers.peer_uid(left) == os.getuid()
