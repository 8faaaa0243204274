"""Equality modulo the documented substitutions, with differences named variable by variable.

The substitutions, and nothing else, are what may differ between the container
and a run here (docs/DEVELOPMENT.md, "Differential tests against the real toolkit"):

1. host tree root: ``<run>/algo-k/opt/ml`` (processes mode) stands for ``/opt/ml``;
2. interpreter: the toolkit venv's ``sys.executable`` and smmpi's rank interpreter
   both stand for the image's Python (``<python>``);
3. the toolkit's own install: the ``gethostname`` extension preloaded by mpirun
   (``<gethostname>``), and the interpreter's ``sys.path`` that the toolkit
   appends to PYTHONPATH after the code dir (only the code dir, first on both
   sides, is compared; smmpi's rank hook folder, ``<run>/.smmpi/...``, is dropped);
4. the machine's ``PATH`` and ``LD_LIBRARY_PATH`` (``<PATH>``, ``<LD_LIBRARY_PATH>``);
5. ``SAGEMAKER_BASE_DIR``, the toolkit's switch to a host tree, exists only in the oracle;
6. in a local run, what smmpi leaves to this machine or adds for its own supervision
   (:data:`LOCAL_ONLY`): HOME and TMPDIR, the machine's PATH and LD_LIBRARY_PATH, the toolkit's
   LD_PRELOAD (its gethostname shim is not installed here), ``SMMPI_*``, and
   ``CUDA_VISIBLE_DEVICES`` (each instance's share of this machine's GPUs, where it has
   enough; a SageMaker instance sees all of its own).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

ORACLE_ONLY = frozenset({"SAGEMAKER_BASE_DIR"})
LOCAL_ONLY = frozenset(
    {"HOME", "TMPDIR", "PATH", "LD_LIBRARY_PATH", "LD_PRELOAD", "CUDA_VISIBLE_DEVICES"}
)
LOCAL_PREFIX = "SMMPI_"
MACHINE = ("PATH", "LD_LIBRARY_PATH")


@dataclass(frozen=True)
class Substitutions:
    roots: Sequence[str] = ()  # every host tree root of the run (both sides)
    pythons: Sequence[str] = ()  # interpreter paths that stand for the image's
    preloads: Sequence[str] = ()  # gethostname extension paths

    def text(self, value: str) -> str:
        for root in sorted(self.roots, key=len, reverse=True):
            value = value.replace(root, "/opt/ml")
        for path in self.pythons:
            value = re.sub(rf"(?<![\w/.-]){re.escape(path)}(?![\w/.-])", "<python>", value)
        for path in self.preloads:
            value = value.replace(path, "<gethostname>")
        return value

    def variable(self, name: str, value: str) -> str:
        if name in MACHINE:
            return f"<{name}>"
        if name == "PYTHONPATH":
            return self.pythonpath(value)
        return self.text(value)

    def pythonpath(self, value: str) -> str:
        """The code dir, which both put first; the rest is each interpreter's own path.

        smmpi's rank hook (a folder under the run's ``.smmpi``) is not compared.
        """
        parts = [self.text(p) for p in value.split(":") if p and "/.smmpi/" not in p]
        return parts[0] if parts else ""


def _json(value: str) -> Any:
    if value[:1] in "[{":
        try:
            return json.loads(value)
        except ValueError:
            return None
    return None


def _walk(path: str, a: Any, b: Any) -> Iterable[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b)):
            if key not in b:
                yield f"{path}.{key}: only the toolkit has it ({a[key]!r})"
            elif key not in a:
                yield f"{path}.{key}: only smmpi has it ({b[key]!r})"
            else:
                yield from _walk(f"{path}.{key}", a[key], b[key])
    elif a != b:
        yield f"{path}: toolkit {a!r} != smmpi {b!r}"


def env_diff(
    toolkit: Mapping[str, str],
    ours: Mapping[str, str],
    subs: Substitutions,
    *,
    names: Iterable[str] | None = None,
) -> list[str]:
    """One line per differing variable (JSON values: per differing key), empty when equal."""
    wanted = set(names) if names is not None else set(toolkit) | set(ours)
    lines: list[str] = []
    for name in sorted(wanted - ORACLE_ONLY):
        if name not in ours:
            if name in toolkit:
                lines.append(f"{name}: only the toolkit sets it ({toolkit[name]!r})")
            continue
        if name not in toolkit:
            lines.append(f"{name}: only smmpi sets it ({ours[name]!r})")
            continue
        a, b = subs.variable(name, toolkit[name]), subs.variable(name, ours[name])
        ja, jb = _json(a), _json(b)
        if ja is not None and jb is not None:
            lines.extend(_walk(name, ja, jb))
        elif a != b:
            lines.append(f"{name}: toolkit {a!r} != smmpi {b!r}")
    return lines


def argv_diff(toolkit: Sequence[str], ours: Sequence[str], subs: Substitutions) -> list[str]:
    """Token by token; a length difference is reported at the first extra token."""
    a = [subs.text(t) for t in toolkit]
    b = [subs.text(t) for t in ours]
    lines = [
        f"argv[{i}]: toolkit {x!r} != smmpi {y!r}"
        for i, (x, y) in enumerate(zip(a, b, strict=False))
        if x != y
    ]
    if len(a) != len(b):
        n = min(len(a), len(b))
        lines.append(f"argv length: toolkit {len(a)} != smmpi {len(b)}; extra: {(a[n:] or b[n:])}")
    return lines
