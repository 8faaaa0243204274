"""Entry points and users' scripts: what ships with each, and every bad ENTRY one line."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from smmpi.catalog import (
    RUNTIME_MODULE,
    check_container_entry,
    imported_modules,
    missing_module_hint,
    packaged,
    resolve,
)
from smmpi.errors import BadInput


def test_a_packaged_entry_ships_with_its_sibling_modules_and_the_runtime() -> None:
    names = [ep.name for ep in packaged()]
    assert "demo" in names and "broadcast" in names and RUNTIME_MODULE[:-3] not in names
    demo = resolve("demo")
    shipped = [name for _, name in demo.files()]
    assert demo.packaged and demo.script == "demo.py" and RUNTIME_MODULE in shipped
    assert len(shipped) > 2  # demo imports parts of its own, and they ship too
    assert all(size > 0 for _, size in demo.manifest())


def test_a_users_script_ships_alone_and_a_source_dir_whole(tmp_path: Path) -> None:
    code = tmp_path / "code"
    (code / "pkg").mkdir(parents=True)
    (code / "train.py").write_text("import helper\n")
    (code / "helper.py").write_text("X = 1\n")
    (code / "pkg" / "a.py").write_text("")
    (code / "__pycache__").mkdir()
    (code / "__pycache__" / "x.pyc").write_bytes(b"")
    alone = resolve(str(code / "train.py"))
    assert sorted(n for _, n in alone.files()) == [RUNTIME_MODULE, "train.py"]
    hint = missing_module_hint(alone, "ModuleNotFoundError: No module named 'helper'")
    assert hint is not None and f"--source-dir {code}" in hint
    whole = resolve(str(code / "train.py"), code)
    assert sorted(n for _, n in whole.files()) == [
        "helper.py", "pkg/a.py", RUNTIME_MODULE, "train.py",
    ]  # fmt: skip
    assert missing_module_hint(whole, "ModuleNotFoundError: No module named 'helper'") is None


@pytest.mark.parametrize(
    ("entry", "allowed"),
    [
        ("", "a packaged entry point name or a path to a .py file"),
        ("dmeo", "one of "),
        ("/no/such/train.py", "an existing .py file (no such file)"),
        ("/etc/hostname", "a Python file ending in .py"),
    ],
)
def test_a_bad_entry_is_one_line(entry: str, allowed: str) -> None:
    with pytest.raises(BadInput) as refused:
        resolve(entry)
    assert str(refused.value).startswith(f"invalid ENTRY: {entry!r}; allowed: {allowed}")


def test_what_the_container_refuses_and_what_cannot_ship(tmp_path: Path) -> None:
    check_container_entry("sub/train_v2.py", "ENTRY")
    for bad in ("my train.py", "../train.py", "sub/./x.py", "-x.py"):
        with pytest.raises(BadInput, match="the SageMaker container refuses others"):
            check_container_entry(bad, "ENTRY")
    (tmp_path / "train.py").write_text("")
    os.mkfifo(tmp_path / "pipe")
    with pytest.raises(BadInput, match=r"^invalid source_dir: 'pipe'; allowed: regular files"):
        resolve(str(tmp_path / "train.py"), tmp_path)
    (tmp_path / "beside").mkdir()
    with pytest.raises(BadInput, match="a file inside source_dir"):
        resolve(str(tmp_path / "train.py"), tmp_path / "beside")


def test_imports_are_read_without_running_the_file(tmp_path: Path) -> None:
    script = tmp_path / "s.py"
    script.write_text("import os.path, numpy as np\nfrom mpi4py import MPI\nfrom . import rel\n")
    assert imported_modules(script) == {"os", "numpy", "mpi4py"}
