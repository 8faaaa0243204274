"""The one tar packer and extractor: reproducible archives, nothing written outside the folder."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest

from smmpi.archives import extract, pack, tar_dirs
from smmpi.errors import SmmpiError


def _files(tmp_path: Path) -> list[tuple[Path, str]]:
    (tmp_path / "a.py").write_text("print('a')\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.txt").write_text("b\n")
    return [(tmp_path / "a.py", "a.py"), (tmp_path / "sub" / "b.txt", "sub/b.txt")]


def test_pack_is_reproducible_and_extracts_back(tmp_path: Path) -> None:
    files = _files(tmp_path)
    first = pack(files)
    (tmp_path / "a.py").touch()  # a new mtime changes nothing
    assert pack(files) == first
    out = extract(first, tmp_path / "out")
    assert sorted(p.relative_to(tmp_path / "out").as_posix() for p in out) == ["a.py", "sub/b.txt"]
    assert (tmp_path / "out" / "sub" / "b.txt").read_text() == "b\n"


def _with_link(target: str) -> bytes:
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w:gz") as tar:
        info = tarfile.TarInfo("link")
        info.type, info.linkname = tarfile.SYMTYPE, target
        tar.addfile(info)
    return raw.getvalue()


def test_links_are_refused_unless_allowed_and_never_outside(tmp_path: Path) -> None:
    inside = _with_link("a.py")
    with pytest.raises(SmmpiError, match="refusing unsafe member 'link'"):
        extract(inside, tmp_path / "strict")
    extract(inside, tmp_path / "code", links=True)
    assert (tmp_path / "code" / "link").is_symlink()
    with pytest.raises(SmmpiError, match="refusing unsafe member"):
        extract(_with_link("/etc/passwd"), tmp_path / "escape", links=True)
    assert not (tmp_path / "escape" / "link").exists()


def test_tar_dirs_merges_hosts(tmp_path: Path) -> None:
    for host in ("algo-1", "algo-2"):
        (tmp_path / host).mkdir()
        (tmp_path / host / f"{host}.txt").write_text(host)
    archive = tmp_path / "model.tar.gz"
    tar_dirs([tmp_path / "algo-1", tmp_path / "algo-2"], archive)
    with tarfile.open(archive) as tar:
        assert sorted(tar.getnames()) == ["algo-1.txt", "algo-2.txt"]
