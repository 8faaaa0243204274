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
from smmpi.trees import MAX_PATH, TreeRefused, copy_tree


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


# ---------------------------------------------------------------- what leaves an instance


def _host(tmp_path: Path) -> Path:
    """``hosts/algo-1/opt/ml/model`` holding a file, a folder, a link inside and links out."""
    model = tmp_path / "hosts" / "algo-1" / "opt" / "ml" / "model"
    (model / "ckpt-3").mkdir(parents=True)
    (model / "ckpt-3" / "weights").write_text("w")
    (model / "latest").symlink_to("ckpt-3")
    (model / "etc").symlink_to("/etc")
    (model / "shadow").symlink_to("/etc/shadow")
    return model


def test_tar_dirs_stores_links_as_links_and_never_reads_through_one(tmp_path: Path) -> None:
    model = _host(tmp_path)
    archive = tmp_path / "model.tar.gz"
    tar_dirs([model], archive, below=tmp_path / "hosts")
    with tarfile.open(archive) as tar:
        members = {m.name: m for m in tar.getmembers()}
    assert sorted(members) == ["ckpt-3/weights", "etc", "latest", "shadow"]
    assert [members[n].linkname for n in ("etc", "latest", "shadow")] == [
        "/etc",
        "ckpt-3",
        "/etc/shadow",
    ]
    assert members["shadow"].size == 0


@pytest.mark.parametrize("linked", ["model", "ml"])
def test_tar_dirs_refuses_a_folder_that_is_or_lies_below_a_link(
    tmp_path: Path, linked: str
) -> None:
    """A rank's ``/opt/ml/model`` (or, in processes mode, ``/opt/ml``) swapped for a link."""
    ml = tmp_path / "hosts" / "algo-1" / "opt" / "ml"
    ml.parent.mkdir(parents=True)
    if linked == "ml":
        ml.symlink_to("/etc")
    else:
        ml.mkdir()
        (ml / "model").symlink_to("/etc")
    archive = tmp_path / "model.tar.gz"
    with pytest.raises(TreeRefused) as err:
        tar_dirs([ml / "model"], archive, below=tmp_path / "hosts")
    path = "/opt/ml" if linked == "ml" else "/opt/ml/model"
    assert str(err.value).startswith(f"algo-1's {path} is a link (to /etc): ")
    assert not archive.exists()


def test_tar_dirs_names_a_path_over_path_max_and_its_folder(tmp_path: Path) -> None:
    model = tmp_path / "hosts" / "algo-1" / "opt" / "ml" / "model"
    model.mkdir(parents=True)
    fd = os.open(model, os.O_RDONLY)
    try:  # deeper than a path can name: one folder at a time
        for _ in range(MAX_PATH // 40 + 1):
            os.mkdir("d" * 39, dir_fd=fd)
            fd, old = os.open("d" * 39, os.O_RDONLY, dir_fd=fd), fd
            os.close(old)
    finally:
        os.close(fd)
    with pytest.raises(TreeRefused, match=r"^algo-1's /opt/ml/model/d{39}/.* over 4095 bytes"):
        tar_dirs([model], tmp_path / "model.tar.gz", below=tmp_path / "hosts")


def test_copy_tree_copies_links_as_links_and_never_writes_through_one(tmp_path: Path) -> None:
    """Two instances synced into one folder: the first's link ``sub`` to a folder outside
    must not carry the second's ``sub/written`` there."""
    hosts, outside, dest = tmp_path / "hosts", tmp_path / "outside", tmp_path / "synced"
    outside.mkdir()
    dest.mkdir()
    first = hosts / "algo-1" / "ckpt"
    first.mkdir(parents=True)
    (first / "sub").symlink_to(outside)
    second = hosts / "algo-2" / "ckpt"
    (second / "sub").mkdir(parents=True)
    (second / "sub" / "written").write_text("algo-2")
    assert copy_tree(hosts, first, dest) == 1
    assert copy_tree(hosts, second, dest) == 1
    assert list(outside.iterdir()) == []
    assert (dest / "sub" / "written").read_text() == "algo-2"
    (first / "sub").unlink()
    (first / "sub").symlink_to("/etc")
    copy_tree(hosts, first, dest)  # a folder that became a link: replaced by the link
    assert os.readlink(dest / "sub") == "/etc"


def _tar(members: list[tarfile.TarInfo]) -> bytes:
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w:gz") as tar:
        for info in members:
            tar.addfile(info, io.BytesIO(b"x" * info.size) if info.isfile() else None)
    return raw.getvalue()


def _member(name: str, link: str | None = None) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    if link is None:
        info.size = 1
    else:
        info.type, info.linkname = tarfile.SYMTYPE, link
    return info


def test_extract_never_writes_through_a_link_of_the_archive(tmp_path: Path) -> None:
    hostile = _tar([_member("up", "."), _member("up/x")])
    with pytest.raises(SmmpiError, match="refusing member 'up/x': up is a link"):
        extract(hostile, tmp_path / "out", links=True)
    assert not (tmp_path / "out" / "x").exists()


def test_extract_never_writes_through_a_link_on_disk(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    dest = tmp_path / "out"
    (dest / "sub").mkdir(parents=True)
    (dest / "sub" / "x").symlink_to(outside / "x")
    with pytest.raises(SmmpiError, match="refusing unsafe member 'sub/x'"):
        extract(_tar([_member("sub/x")]), dest, links=True)
    (dest / "sub" / "x").unlink()
    (dest / "sub" / "x").symlink_to(dest / "kept")  # inside, and still a link: not written
    (dest / "kept").write_text("the user's")
    with pytest.raises(SmmpiError, match=r"refusing member 'sub/x': .*/out/sub/x is a link"):
        extract(_tar([_member("sub/x")]), dest, links=True)
    assert (dest / "kept").read_text() == "the user's"
    linked = tmp_path / "linked"
    linked.symlink_to(outside)
    with pytest.raises(SmmpiError, match="it is a link"):
        extract(_tar([_member("y")]), linked)
    assert list(outside.iterdir()) == []
