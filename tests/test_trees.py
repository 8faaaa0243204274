"""What leaves an instance is read one folder at a time, never through a link out of it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from smmpi.trees import MAX_PATH, TreeRefused, copy_tree, entries, open_folder, where


@pytest.fixture
def hosts(tmp_path: Path) -> Path:
    """Two instances' trees below a folder smmpi made; algo-1's model links out of it."""
    below = tmp_path / "hosts"
    model = below / "algo-1" / "opt" / "ml" / "model"
    (model / "sub").mkdir(parents=True)
    (model / "weights.bin").write_bytes(b"w" * 10)
    (model / "sub" / "note.txt").write_text("n")
    (model / "etc").symlink_to("/etc")
    (below / "algo-2" / "opt" / "ml").mkdir(parents=True)
    (below / "algo-2" / "opt" / "ml" / "model").symlink_to("/etc")
    return below


def test_a_folder_is_named_as_its_instance_names_it(hosts: Path) -> None:
    assert where(hosts / "algo-1" / "opt/ml/model", hosts) == "algo-1's /opt/ml/model"
    assert where(Path("/elsewhere"), hosts) == "/elsewhere"


def test_links_in_a_tree_are_entries_never_followed(hosts: Path) -> None:
    links = {}
    found = {}
    for entry in entries(hosts, hosts / "algo-1/opt/ml/model"):  # its folder open while current
        found[entry.name] = entry
        if entry.is_link:
            links[entry.name] = entry.link()
    assert sorted(found) == ["etc", "sub", "sub/note.txt", "weights.bin"]
    assert links == {"etc": "/etc"}
    assert found["sub"].is_dir and found["weights.bin"].is_file
    assert list(entries(hosts, hosts / "algo-1/opt/ml/output")) == []  # nothing there


def test_a_folder_that_is_a_link_is_refused_in_one_line(hosts: Path) -> None:
    with pytest.raises(TreeRefused) as refused:
        open_folder(hosts, hosts / "algo-2/opt/ml/model")
    assert "algo-2's /opt/ml/model" in str(refused.value) and "\n" not in str(refused.value)


def test_a_copy_keeps_links_as_links_and_writes_through_none(hosts: Path, tmp_path: Path) -> None:
    dest = tmp_path / "out"
    dest.mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_text("the user's")
    (dest / "weights.bin").symlink_to(victim)  # in the way: replaced, not written through
    copied = copy_tree(hosts, hosts / "algo-1/opt/ml/model", dest)
    assert copied == 3
    assert (dest / "weights.bin").read_bytes() == b"w" * 10 and not (
        dest / "weights.bin"
    ).is_symlink()
    assert os.readlink(dest / "etc") == "/etc" and (dest / "sub/note.txt").read_text() == "n"
    assert victim.read_text() == "the user's"
    only = tmp_path / "only"
    only.mkdir()
    wanted = copy_tree(hosts, hosts / "algo-1/opt/ml/model", only, lambda e: e.is_file)
    assert wanted == 2 and not (only / "etc").is_symlink()


def test_a_path_no_program_could_open_is_refused(hosts: Path) -> None:
    deep = hosts / "algo-1" / "opt/ml/output"
    here = deep
    here.mkdir(parents=True)
    fd = os.open(here, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(MAX_PATH // 250 + 1):  # each step by descriptor: no path is too long
            os.mkdir("d" * 250, dir_fd=fd)
            child = os.open("d" * 250, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = child
    finally:
        os.close(fd)
    with pytest.raises(TreeRefused, match=r"holds a path of over 4095 bytes"):
        list(entries(hosts, deep))
