"""The one tar packer and extractor: reproducible archives, nothing written outside the folder."""

from __future__ import annotations

import io
import os
import subprocess
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


OLD_PYTHON = "/usr/bin/python3"  # Debian 12's 3.11.2: tarfile has no extraction filters


def test_extract_on_a_python_without_tar_filters(tmp_path: Path) -> None:
    """The same rules on a Python that predates ``filter=`` (3.10.0-3.10.11, 3.11.0-3.11.3)."""
    probe = "import tarfile, sys; sys.exit(hasattr(tarfile, 'data_filter'))"
    assert subprocess.run([OLD_PYTHON, "-c", probe]).returncode == 0, "needs a Python < 3.11.4"
    good = tmp_path / "good.tar.gz"
    good.write_bytes(pack(_files(tmp_path)))
    (tmp_path / "inside.tar.gz").write_bytes(_with_link("a.py"))
    (tmp_path / "escape.tar.gz").write_bytes(_with_link("../../etc/passwd"))
    script = (
        "import sys\n"
        "from pathlib import Path\n"
        "from smmpi.archives import extract\n"
        "from smmpi.errors import SmmpiError\n"
        "t = Path(sys.argv[1])\n"
        "print(sorted(p.name for p in extract(t / 'good.tar.gz', t / 'out')))\n"
        "extract(t / 'inside.tar.gz', t / 'code', links=True)\n"
        "print((t / 'code' / 'link').is_symlink())\n"
        "try:\n"
        "    extract(t / 'escape.tar.gz', t / 'esc', links=True)\n"
        "except SmmpiError as err:\n"
        "    print(err)\n"
    )
    root = Path(__file__).resolve().parents[1]
    done = subprocess.run(
        [
            OLD_PYTHON,
            "-I",
            "-c",
            f"import sys; sys.path.insert(0, {str(root)!r})\n" + script,
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[:2] == ["['a.py', 'b.txt']", "True"]
    assert "refusing unsafe member" in done.stdout.splitlines()[2]
    assert not (tmp_path / "esc" / "link").exists()


def test_the_fallback_rules_match_the_data_filter(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delattr(tarfile, "data_filter", raising=False)
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w:gz") as tar:
        info = tarfile.TarInfo("run.sh")
        info.mode, info.uid, info.size = 0o6777, 4242, 2
        tar.addfile(info, io.BytesIO(b"ok"))
    (path,) = extract(raw.getvalue(), tmp_path / "out")
    assert path.stat().st_mode & 0o7777 == 0o755
    assert path.stat().st_uid == os.getuid()
    with pytest.raises(SmmpiError, match="refusing unsafe member"):
        extract(_with_link("../outside"), tmp_path / "esc", links=True)
