"""Packaged entry points and users' scripts: what gets run, and what gets uploaded with it.

An entry point is resolved to a :class:`Program`: the script's file name (as
the container will see it under ``/opt/ml/code``) and the files that make up
its source dir. What ships is what the SageMaker SDK would ship: a packaged
entry point with the sibling modules it imports; a user's script alone, as
the SDK uploads ``entry_point`` without ``source_dir`` (``tar_and_upload_dir``
in ``sagemaker/fw_utils.py`` archives the script alone), or the whole
``--source-dir`` folder when one is given. Both travel with
``smmpi_runtime.py``, so that they can call its helpers too.
"""

from __future__ import annotations

import ast
import functools
import os
import re
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from smmpi.bounded import (
    CODE_MAX_BYTES,
    copy_regular,
    human,
    kernel_root,
    kind,
    lookup,
    open_regular,
)
from smmpi.errors import BadInput

RUNTIME_MODULE = "smmpi_runtime.py"

# sagemaker_training/process.py refuses any other entry-point name.
_CONTAINER_ENTRY_RE = re.compile(r"^[A-Za-z0-9._][A-Za-z0-9._+-]*(/[A-Za-z0-9._+-]+)*$")

# Never uploaded: VCS data, caches, virtualenvs, build output.
EXCLUDED_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        "__pycache__",
        ".venv",
        "venv",
        "env",
        ".tox",
        ".nox",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".ipynb_checkpoints",
        "node_modules",
        "build",
        "dist",
        ".eggs",
    }
)
EXCLUDED_SUFFIXES = (".pyc", ".pyo")

# Entry points that need a framework pick its estimator by default.
FRAMEWORK_OF = {"tf_multiworker": "tensorflow", "torch_ddp": "pytorch"}

#: Above this many bytes of code, ``submit`` warns before uploading: data belongs in an
#: input channel, not in every instance's code dir.
SOURCE_WARN_BYTES = 50_000_000


def entry_points_dir() -> Path:
    """Where the packaged entry points are: inside the wheel, or in a checkout."""
    here = Path(__file__).resolve().parent
    for candidate in (here / "entry_points", here.parent / "entry_points"):
        if (candidate / RUNTIME_MODULE).is_file():
            return candidate
    raise FileNotFoundError(f"packaged entry points not found next to {here}")


def _description(path: Path) -> str:
    try:
        doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")))
    except (OSError, SyntaxError, ValueError):
        doc = None
    return (doc or "").strip().splitlines()[0] if doc else ""


@dataclass(frozen=True)
class EntryPoint:
    name: str
    path: Path
    description: str


def packaged() -> list[EntryPoint]:
    """The packaged entry points, sorted by name (the runtime helper is not one)."""
    root = entry_points_dir()
    return [
        EntryPoint(p.stem, p, _description(p))
        for p in sorted(root.glob("*.py"))
        if p.name != RUNTIME_MODULE and not p.name.startswith("_")
    ]


@dataclass(frozen=True)
class Program:
    """A resolved entry point: the script name inside the code dir and where its files come from."""

    name: str
    script: str  # file name relative to the code dir (sagemaker_program)
    source_dir: Path  # directory whose files form the code dir
    packaged: bool
    whole_dir: bool = False  # a --source-dir was given: every file of it ships

    @property
    def framework_hint(self) -> str | None:
        return FRAMEWORK_OF.get(self.name) if self.packaged else None

    def files(self) -> Iterator[tuple[Path, str]]:
        """(absolute path, archive name) of every file of the code dir."""
        return iter(self._files)

    @functools.cached_property
    def _files(self) -> tuple[tuple[Path, str], ...]:
        """Found once: the run lays the same code dir out on every emulated host."""
        return tuple(self._find_files())

    def _find_files(self) -> Iterator[tuple[Path, str]]:
        if self.packaged:
            for name in sorted({self.script, RUNTIME_MODULE, *self._local_imports()}):
                yield self.source_dir / name, name
            return
        if not self.whole_dir:
            for name in sorted({self.script, RUNTIME_MODULE}):
                yield (self.source_dir if name == self.script else entry_points_dir()) / name, name
            return
        seen: set[str] = set()
        for path in sorted(self.source_dir.rglob("*")):
            rel = path.relative_to(self.source_dir)
            excluded = any(part in EXCLUDED_DIRS for part in rel.parts[:-1])
            if excluded or path.name.endswith(EXCLUDED_SUFFIXES) or not _ships(path, rel):
                continue
            seen.add(rel.as_posix())
            yield path, rel.as_posix()
        if RUNTIME_MODULE not in seen:
            yield entry_points_dir() / RUNTIME_MODULE, RUNTIME_MODULE

    def _local_imports(self) -> set[str]:
        """Sibling modules a packaged script imports, and theirs (demo imports three parts)."""
        found: set[str] = set()
        todo = [self.script]
        while todo:
            for name in imported_modules(self.source_dir / todo.pop()):
                module = f"{name}.py"
                if module not in found and (self.source_dir / module).is_file():
                    found.add(module)
                    todo.append(module)
        return found

    def manifest(self) -> list[tuple[str, int]]:
        """(archive name, bytes) of every file that ships; an unreadable one, a file that is
        not regular, or code over :data:`~smmpi.bounded.CODE_MAX_BYTES` is bad input."""
        field = "source_dir" if self.whole_dir else "ENTRY"
        out, total = [], 0
        for path, name in self.files():
            with open_regular(path, field, CODE_MAX_BYTES) as (_, st):
                size = st.st_size
            total += size
            if total > CODE_MAX_BYTES:
                raise BadInput(
                    field, str(self.source_dir), f"code of at most {human(CODE_MAX_BYTES)} in all"
                )
            out.append((name, size))
        return out

    def copy_to(self, dest: Path) -> None:
        """Lay the code dir out at ``dest`` (as ``/opt/ml/code`` would be)."""
        field = "source_dir" if self.whole_dir else "ENTRY"
        made: set[Path] = set()
        for src, name in self.files():
            target = dest / name
            if target.parent not in made:  # each folder once: a mkdir costs as a file does
                target.parent.mkdir(parents=True, exist_ok=True)
                made.add(target.parent)
            copy_regular(src, target, field, CODE_MAX_BYTES)


def check_container_entry(script: str, field: str) -> None:
    """BadInput unless the container's toolkit accepts ``script`` as its entry point's name
    (sagemaker-training 5.x ``process.validate_entry_point``: the pattern, no ``.``/``..``)."""
    segments = script.split("/")
    if not _CONTAINER_ENTRY_RE.match(script) or any(s in (".", "..") for s in segments):
        raise BadInput(
            field,
            script,
            "a file name matching [A-Za-z0-9._][A-Za-z0-9._+-]* with no . or .. folder "
            "(the SageMaker container refuses others)",
        )


def _ships(path: Path, rel: Path) -> bool:
    """Whether a source dir entry ships: a regular file (through a link too) does; a folder
    or a link that leads nowhere does not; a FIFO, socket or device is refused (reading one
    could hang or never end, and SageMaker's container would get no file for it)."""
    try:
        st = path.stat()
    except OSError:
        return False  # a link that leads nowhere (an editor's lock file, say): no content
    if not (stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode)):
        raise BadInput(
            "source_dir",
            rel.as_posix(),
            "regular files and folders only "
            f"(this is {kind(st.st_mode)}: move it out of the folder)",
        )
    root = kernel_root(path)
    if root is not None:  # /proc/self/environ is smmpi's environment, AWS keys and all
        raise BadInput(
            "source_dir", rel.as_posix(), f"files of your own (this is in {root}, the kernel's)"
        )
    return stat.S_ISREG(st.st_mode)


def imported_modules(path: Path) -> set[str]:
    """Top-level names of the absolute imports in a Python file."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
        elif isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
    return names


_NO_MODULE_RE = re.compile(r"ModuleNotFoundError: No module named '([A-Za-z0-9_]+)")


def missing_module_hint(program: Program, failure: str) -> str | None:
    """Say why a sibling module is missing: without --source-dir only the script ships."""
    match = _NO_MODULE_RE.search(failure)
    if program.packaged or program.whole_dir or match is None:
        return None
    name = match.group(1)
    beside = [p for p in (f"{name}.py", name) if (program.source_dir / p).exists()]
    if not beside:
        return None
    return (
        f"{beside[0]} is beside {program.script} but only the script ships without "
        f"--source-dir (as on SageMaker): pass --source-dir {program.source_dir}"
    )


def resolve(entry: str, source_dir: str | Path | None = None) -> Program:
    """Turn ENTRY (a packaged name or a path to a .py file) into a Program, or raise BadInput."""
    if not isinstance(entry, str):
        raise BadInput("entry", entry, "a packaged entry point name or a path to a .py file")
    if not entry:
        raise BadInput("ENTRY", entry, "a packaged entry point name or a path to a .py file")
    if source_dir is not None and (
        not isinstance(source_dir, (str, os.PathLike)) or not os.fspath(source_dir)
    ):  # "" would be the current folder
        raise BadInput("source_dir", source_dir, "a path to an existing directory")
    looks_like_path = entry.endswith(".py") or "/" in entry or lookup("ENTRY", entry)
    if not looks_like_path:
        names = {ep.name: ep for ep in packaged()}
        if entry not in names:
            raise BadInput(
                "ENTRY", entry, "one of " + ", ".join(sorted(names)) + ", or a path to a .py file"
            )
        ep = names[entry]
        return Program(ep.name, ep.path.name, ep.path.parent, packaged=True)
    path = Path(entry).expanduser()
    if not lookup("ENTRY", path):
        raise BadInput("ENTRY", entry, "an existing .py file (no such file)")
    if path.is_dir() or path.suffix != ".py":
        raise BadInput("ENTRY", entry, "a Python file ending in .py")
    if not path.is_file():
        raise BadInput("ENTRY", entry, f"a regular .py file (this is {kind(path.stat().st_mode)})")
    path = path.resolve()
    if source_dir is not None:
        src = Path(source_dir).expanduser()
        if not lookup("source_dir", src) or not src.is_dir():
            raise BadInput("source_dir", str(source_dir), "an existing directory")
        src = src.resolve()
        try:
            script = path.relative_to(src).as_posix()
        except ValueError:
            raise BadInput("ENTRY", entry, f"a file inside source_dir {src}") from None
    else:
        src, script = path.parent, path.name
    check_container_entry(script, "ENTRY")
    program = Program(path.stem, script, src, packaged=False, whole_dir=source_dir is not None)
    program.manifest()  # an unreadable file is bad input now, not a traceback at upload
    return program
