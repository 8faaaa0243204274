"""Files read for users are regular and capped; files written never go through a link; integers
are ASCII digits."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from smmpi.bounded import (
    FileRefused,
    ascii_int,
    copy_regular,
    create,
    existing_problem,
    human,
    kernel_root,
    lookup,
    read_regular,
    regular_tree,
)
from smmpi.errors import BadInput


def test_a_regular_file_is_read_within_its_cap(tmp_path: Path) -> None:
    small = tmp_path / "small"
    small.write_bytes(b"1234")
    assert read_regular(small, "config file", 4) == b"1234"
    with pytest.raises(FileRefused) as big:
        read_regular(small, "config file", 3)
    assert str(big.value) == (
        f"invalid config file: '{small}'; allowed: a regular file smmpi can use "
        "(4 bytes, over the 3 bytes limit)"
    )


def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(FileRefused, match=r"\(this is a FIFO\)"):
        read_regular(fifo, "ENTRY", 100)
    with pytest.raises(FileRefused, match="cannot be read"):
        read_regular(tmp_path / "missing", "ENTRY", 100)


def test_writes_never_go_through_a_link_or_a_hard_link(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("the user's")
    (tmp_path / "link").symlink_to(victim)
    with pytest.raises(FileRefused, match=r"\(a link\)"):
        create(tmp_path / "link", "log_dir")
    os.link(victim, tmp_path / "hard")
    with pytest.raises(FileRefused, match="a file with 2 hard links"):
        create(tmp_path / "hard", "log_dir")
    assert victim.read_text() == "the user's"
    assert existing_problem(tmp_path / "hard") == "a file with 2 hard links"
    assert existing_problem(tmp_path / "link") == "this is a symbolic link"
    assert existing_problem(tmp_path / "new") is None
    with create(tmp_path / "new", "log_dir") as f:
        f.write(b"ok")
    assert ((tmp_path / "new").stat().st_mode & 0o777) == 0o600


def test_a_copy_keeps_mode_and_time(tmp_path: Path) -> None:
    src = tmp_path / "train.py"
    src.write_text("print(1)\n")
    src.chmod(0o750)
    os.utime(src, (1_000_000, 1_000_000))
    assert copy_regular(src, tmp_path / "copy.py", "ENTRY", 100) == 9
    copied = (tmp_path / "copy.py").stat()
    assert (copied.st_mode & 0o777, copied.st_mtime) == (0o750, 1_000_000)


def test_paths_beyond_the_systems_limits_are_one_line(tmp_path: Path) -> None:
    assert lookup("ENTRY", tmp_path) and not lookup("ENTRY", tmp_path / "nothing")
    for path in ("/tmp/" + "n" * 256, "/tmp/" + "d/" * 2100):
        with pytest.raises(BadInput, match="a path of at most 4095 bytes, each name in it at most"):
            lookup("ENTRY", path)
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    with pytest.raises(BadInput, match=r"a path smmpi can look up \(Too many levels"):
        lookup("ENTRY", loop / "x")


def test_a_channel_tree_is_regular_files_capped_in_all(tmp_path: Path) -> None:
    data = tmp_path / "data"
    (data / "part").mkdir(parents=True)
    (data / "a.csv").write_bytes(b"x" * 10)
    (data / "part" / "b.csv").write_bytes(b"y" * 10)
    assert [name for _, name in regular_tree(data, "inputs.train", 20)] == ["a.csv", "part/b.csv"]
    with pytest.raises(FileRefused, match="over the 19 bytes limit in all"):
        regular_tree(data, "inputs.train", 19)
    (data / "etc").symlink_to("/etc")
    with pytest.raises(FileRefused, match="a link to a folder"):
        regular_tree(data, "inputs.train", 20)
    (data / "etc").unlink()
    (data / "env").symlink_to("/proc/self/environ")
    with pytest.raises(FileRefused, match=r"it is in /proc, the kernel's files"):
        regular_tree(data, "inputs.train", 1 << 20)
    assert kernel_root(data / "env") == "/proc" and kernel_root(data / "a.csv") is None


@pytest.mark.parametrize(
    ("text", "number"),
    [
        ("12", 12),
        (" -3 ", -3),
        ("+4", 4),
        ("１２", None),
        ("١٢", None),
        ("1_000", None),
        ("", None),
    ],
)
def test_integers_are_ascii_digits(text: str, number: int | None) -> None:
    assert ascii_int(text) == number


def test_sizes_in_words() -> None:
    assert [human(n) for n in (5, 2048, 3 << 20, 1 << 30)] == [
        "5 bytes", "2 KiB", "3 MiB", "1 GiB",
    ]  # fmt: skip
