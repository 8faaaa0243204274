"""Processes mode cannot give each emulated instance its own literal ``/opt/ml``: notice its use.

A rank that writes ``/opt/ml/model/model.txt`` (common in SageMaker code) writes this
machine's real /opt/ml, shared by every emulated instance, and nothing of it reaches the
job's ``model.tar.gz``. :class:`OptMlWatch` compares /opt/ml before and after a run, says
so in one line, and removes an /opt/ml (and an /opt) that did not exist before the run:
smmpi never leaves behind what its run created, nor deletes what it did not.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

OPT_ML = Path("/opt/ml")
_MAX_FILES = 10_000  # a larger existing /opt/ml is compared on its first files only


def _files(root: Path) -> dict[str, tuple[int, int]]:
    """Every file under ``root``: path -> (mtime_ns, size)."""
    found: dict[str, tuple[int, int]] = {}
    for folder, _dirs, names in os.walk(root):
        for name in names:
            path = os.path.join(folder, name)
            try:
                info = os.lstat(path)
            except OSError:
                continue
            found[path] = (info.st_mtime_ns, info.st_size)
            if len(found) >= _MAX_FILES:
                return found
    return found


class OptMlWatch:
    """Start before the ranks do; :meth:`finish` after the last one has ended."""

    def __init__(self, root: Path = OPT_ML) -> None:
        self.root = root
        self.parent_existed = os.path.lexists(root.parent)
        self.existed = os.path.lexists(root)
        self.before = _files(root) if self.existed else {}

    def finish(self) -> str | None:
        """One line when the run wrote under /opt/ml, else None (removes what the run created)."""
        if not os.path.lexists(self.root):
            return None
        after = _files(self.root)
        written = sorted(p for p, stamp in after.items() if self.before.get(p) != stamp)
        if self.existed and not written:
            return None
        example = f" ({written[0]}{', ...' if len(written) > 1 else ''})" if written else ""
        what = f"the ranks wrote {len(written)} file(s) under this machine's {self.root}{example}"
        if not self.existed:
            shutil.rmtree(self.root, ignore_errors=True)
            if not self.parent_existed:
                try:
                    self.root.parent.rmdir()
                except OSError:
                    pass
            what += ", which this run created and has removed"
        return (
            f"{what}: in processes mode every emulated instance shares it and none of it "
            "reaches model.tar.gz; on SageMaker each instance has its own /opt/ml "
            "(use the SM_* paths, or isolated hosts: --isolation hosts)"
        )
