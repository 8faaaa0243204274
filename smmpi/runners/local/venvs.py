"""Venvs of this Python that see other environments' packages: the image's interpreter here.

Exact mode's toolkit interpreter and a ModelTrainer request's ``python3``/``pip3`` are both
a venv of this machine's Python whose ``.pth`` file adds site folders (the toolkit's, this
environment's: mpi4py, the user's packages), with scripts of their own in ``bin``. Each is
built once, in a temporary folder renamed into place, under a 0700 folder of ``~/.smmpi``,
and reused while its inputs (the folders it sees, this Python) stay the same.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
import sysconfig
import tempfile
import venv
from collections.abc import Mapping, Sequence
from pathlib import Path


def site_packages() -> str:
    """This environment's site-packages (mpi4py, the user's packages)."""
    return sysconfig.get_paths()["purelib"]


def cached_venv(
    root: Path,
    kind: str,
    sitedirs: Sequence[str],
    scripts: Mapping[str, str],
    modules: Mapping[str, str] | None = None,
    startup: str = "",
) -> Path:
    """The venv under ``root`` that sees ``sitedirs`` (first first) through ``smmpi_<kind>.pth``
    and has ``scripts`` (name -> Python source) in ``bin``, run by its own ``python3``;
    ``modules`` (name -> source) in its site-packages, and ``startup``, a statement its
    ``.pth`` runs in every process of the venv once ``sitedirs`` are on ``sys.path``."""
    modules = modules or {}
    parts = [*(f"{k}={v}" for k, v in scripts.items()), *(f"{k}:{v}" for k, v in modules.items())]
    named = "\0".join([kind, *sitedirs, sys.version, *parts, startup])
    venv_dir = root / hashlib.sha256(named.encode()).hexdigest()[:16]
    if all((venv_dir / "bin" / name).is_file() for name in scripts):
        return venv_dir
    root.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(root.parent, 0o700)
    os.chmod(root, 0o700)
    partial = Path(tempfile.mkdtemp(prefix=".building-", dir=root))
    try:  # an interrupt or a failure leaves no half-built venv
        _build(partial, venv_dir, kind, sitedirs, scripts)
        _add(partial, kind, modules, startup)
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    try:
        partial.rename(venv_dir)
    except OSError:  # another run built it meanwhile
        shutil.rmtree(partial, ignore_errors=True)
    return venv_dir


def _build(
    partial: Path, venv_dir: Path, kind: str, sitedirs: Sequence[str], scripts: Mapping[str, str]
) -> None:
    """The venv at ``partial``, its scripts' first lines naming ``venv_dir`` (its final name)."""
    venv.EnvBuilder(with_pip=False, symlinks=True).create(partial)
    purelib = sysconfig.get_paths(vars={"base": str(partial), "platbase": str(partial)})["purelib"]
    added = "; ".join(f"site.addsitedir({d!r})" for d in sitedirs)
    Path(purelib, f"smmpi_{kind}.pth").write_text(f"import site; {added}\n")
    for name, source in scripts.items():
        script = partial / "bin" / name
        script.write_text(f"#!{venv_dir}/bin/python3\n{source}")
        script.chmod(0o700)


def _add(partial: Path, kind: str, modules: Mapping[str, str], startup: str) -> None:
    purelib = sysconfig.get_paths(vars={"base": str(partial), "platbase": str(partial)})["purelib"]
    for name, source in modules.items():
        Path(purelib, f"{name}.py").write_text(source)
    if startup:
        with Path(purelib, f"smmpi_{kind}.pth").open("a") as pth:
            pth.write(f"import sys; {startup}\n")
