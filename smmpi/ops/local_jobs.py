"""The folders of local jobs: created exclusively, listed, and pruned to a cap.

Local jobs live under ``$SMMPI_LOCAL_JOBS`` (default ``~/.smmpi/local-jobs``),
one folder per job name. smmpi creates a folder only if the name is free, and
marks it with a ``.smmpi-local-job`` file; listing and pruning look at marked
folders only, so nothing else in that place is ever touched. After each local
job the oldest finished ones beyond ``$SMMPI_LOCAL_JOBS_KEEP`` (default
:data:`DEFAULT_KEEP`) are removed. A job still in progress is kept unless the
process that ran it is gone.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from smmpi.bounded import ascii_int
from smmpi.errors import BadInput

MARKER = ".smmpi-local-job"
DEFAULT_KEEP = 20
KEEP_ENV = "SMMPI_LOCAL_JOBS_KEEP"


def jobs_root() -> Path:
    """Where local jobs live: ``$SMMPI_LOCAL_JOBS``, else ``~/.smmpi/local-jobs``."""
    explicit = os.environ.get("SMMPI_LOCAL_JOBS")
    return Path(explicit).expanduser() if explicit else Path.home() / ".smmpi" / "local-jobs"


def create_folder(name: str) -> Path:
    """The job's new folder, made only if no local job (or anything else) has the name."""
    root = jobs_root()
    folder = root / name
    try:
        root.mkdir(parents=True, exist_ok=True)
        folder.mkdir()
    except FileExistsError:
        raise BadInput(
            "job_name",
            name,
            f"a name no local job has yet ({folder} exists: pick another --job-name, "
            "or remove it with `smmpi local-jobs prune`)",
        ) from None
    except OSError as err:
        raise BadInput(
            "SMMPI_LOCAL_JOBS", str(root), f"a folder smmpi can write to ({err.strerror})"
        ) from None
    (folder / MARKER).write_text(f"{os.getpid()}\n", encoding="utf-8")
    return folder


def remove_folder(folder: Path) -> None:
    """Remove a folder :func:`create_folder` made (a folder without the marker is left alone)."""
    if (folder / MARKER).is_file():
        shutil.rmtree(folder, ignore_errors=True)


@dataclass(frozen=True)
class LocalJobEntry:
    """One local job as ``smmpi local-jobs list`` shows it."""

    name: str
    status: str
    created: str
    folder: Path
    modified: float
    pid: int | None

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "status": self.status,
            "created": self.created,
            "folder": str(self.folder),
        }

    @property
    def running(self) -> bool:
        """In progress, and the process that runs it is still alive."""
        if self.status != "InProgress" or self.pid is None:
            return False
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True


def _entry(folder: Path) -> LocalJobEntry | None:
    marker = folder / MARKER
    if not marker.is_file():
        return None
    record_path = folder / "describe.json"
    try:
        record: dict[str, Any] = json.loads(record_path.read_text(encoding="utf-8"))
        modified = record_path.stat().st_mtime
    except (OSError, ValueError):
        record, modified = {}, marker.stat().st_mtime
    pid_text = marker.read_text(encoding="utf-8").strip()
    return LocalJobEntry(
        name=folder.name,
        status=str(record.get("TrainingJobStatus", "InProgress")),
        created=str(record.get("CreationTime", "")),
        folder=folder,
        modified=modified,
        pid=int(pid_text) if pid_text.isdigit() else None,
    )


def list_jobs() -> list[LocalJobEntry]:
    """smmpi's local jobs, newest first (folders without smmpi's marker are not listed)."""
    root = jobs_root()
    if not root.is_dir():
        return []
    entries = [_entry(p) for p in root.iterdir() if p.is_dir() and not p.is_symlink()]
    found = [e for e in entries if e is not None]
    return sorted(found, key=lambda e: e.modified, reverse=True)


def check_keep(keep: object) -> int:
    if isinstance(keep, bool) or not isinstance(keep, int) or keep < 0:
        raise BadInput("keep", keep, "an integer >= 0")
    return keep


def configured_keep() -> int:
    """The cap: ``$SMMPI_LOCAL_JOBS_KEEP`` or :data:`DEFAULT_KEEP`."""
    text = os.environ.get(KEEP_ENV, "").strip()
    if not text:
        return DEFAULT_KEEP
    number = ascii_int(text)
    if number is None or number < 0:
        raise BadInput(KEEP_ENV, text, "an integer >= 0 in ASCII digits")
    return number


def prune(keep: int, spare: str | None = None) -> list[str]:
    """Remove all but the ``keep`` newest local jobs (never a running one, nor ``spare``)."""
    check_keep(keep)
    removed = []
    for entry in list_jobs()[keep:]:
        if entry.name == spare or entry.running:
            continue
        remove_folder(entry.folder)
        removed.append(entry.name)
    return removed
