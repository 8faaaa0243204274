"""The folders of local jobs: created exclusively, listed, and pruned to a cap.

Local jobs live under ``$SMMPI_LOCAL_JOBS`` (default ``~/.smmpi/local-jobs``),
one folder per job name. smmpi creates a folder only if the name is free, and
marks it with a ``.smmpi-local-job`` file; listing and pruning look at marked
folders only, so nothing else in that place is ever touched. After each local
job the oldest finished ones beyond ``$SMMPI_LOCAL_JOBS_KEEP`` (default
:data:`DEFAULT_KEEP`) are removed. A job still in progress is kept unless the
process that ran it is gone.

The marker records the job's owner: the pid and start time of the process
that runs it. A reader that finds a job InProgress whose owner is gone (killed,
even by SIGKILL) records it as Failed, "the local run was killed". Folders are
0700 and smmpi's own files in them 0600; older, looser ones are tightened when
found.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from smmpi.bounded import FileRefused, ascii_int, read_regular
from smmpi.errors import BadInput
from smmpi.ops.owners import owner_alive, owner_record
from smmpi.ops.private_files import tighten, tighten_dir, write_private
from smmpi.ops.signals import held

MARKER = ".smmpi-local-job"
DEFAULT_KEEP = 20
KEEP_ENV = "SMMPI_LOCAL_JOBS_KEEP"
KILLED = "the local run was killed"
# A ModelTrainer job's record keeps its processes per host (its request has no MPI
# hyperparameter; the SDK's sm_drivers channel says it, and that copy is not kept).
LOCAL_PPN = "LocalProcessesPerHost"


def jobs_root() -> Path:
    """Where local jobs live: ``$SMMPI_LOCAL_JOBS``, else ``~/.smmpi/local-jobs``."""
    explicit = os.environ.get("SMMPI_LOCAL_JOBS")
    return Path(explicit).expanduser() if explicit else Path.home() / ".smmpi" / "local-jobs"


def _make_root(root: Path) -> None:
    """The root folder, 0700; smmpi's default one (and ``~/.smmpi``) tightened if looser."""
    if os.environ.get("SMMPI_LOCAL_JOBS"):
        root.mkdir(mode=0o700, parents=True, exist_ok=True)  # the user's folder: left as it is
        return
    for own in (root.parent, root):
        own.mkdir(mode=0o700, exist_ok=True)
        tighten_dir(own)


def create_folder(name: str) -> Path:
    """The job's new folder, made only if no local job (or anything else) has the name."""
    root = jobs_root()
    folder = root / name
    try:
        _make_root(root)
        with held():  # an interrupt comes after the marker: the folder is known as smmpi's
            folder.mkdir(mode=0o700)
            write_private(folder / MARKER, owner_record())
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
    return folder


def remove_folder(folder: Path) -> None:
    """Remove a folder :func:`create_folder` made (a folder without the marker is left alone),
    whole: an interrupt waits for the end."""
    if (folder / MARKER).is_file():
        with held():
            shutil.rmtree(folder, ignore_errors=True)


def made_here(name: str) -> bool:
    """Local job ``name``'s folder was made by this process (its marker names it)."""
    marker = jobs_root() / name / MARKER
    try:
        return not marker.is_symlink() and marker.read_text(encoding="utf-8") == owner_record()
    except OSError:
        return False


def discard_unfinished(name: str) -> bool:
    """After an interrupt: remove local job ``name``'s folder if this process made it and the
    job has no record of how it ended (it never ran); True if it did."""
    folder = jobs_root() / name
    record = folder / "describe.json"
    if not made_here(name):
        return False
    try:
        text = record.read_text(encoding="utf-8") if record.exists() else "{}"
    except OSError:
        return False
    try:
        status = json.loads(text).get("TrainingJobStatus", "InProgress")
    except (ValueError, AttributeError):
        return False
    if status != "InProgress":
        return False
    remove_folder(folder)
    return True


@dataclass(frozen=True)
class LocalJobEntry:
    """One local job as ``smmpi local-jobs list`` shows it."""

    name: str
    status: str
    created: str
    folder: Path
    modified: float
    owner: str  # the marker's record: "pid start-time"

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
        return self.status == "InProgress" and owner_alive(self.owner)


def _entry(folder: Path) -> LocalJobEntry | None:
    marker = folder / MARKER
    if not marker.is_file() or marker.is_symlink():
        return None
    record_path = folder / "describe.json"
    try:
        record: dict[str, Any] = json.loads(record_path.read_text(encoding="utf-8"))
        modified = record_path.stat().st_mtime
    except (OSError, ValueError):
        record, modified = {}, marker.stat().st_mtime
    owner = marker.read_text(encoding="utf-8", errors="replace")[:100]
    status = str(record.get("TrainingJobStatus", "InProgress"))
    if status == "InProgress" and not owner_alive(owner):
        record = _mark_killed(folder, record)
        status = str(record["TrainingJobStatus"])
    return LocalJobEntry(
        name=folder.name,
        status=status,
        created=str(record.get("CreationTime", "")),
        folder=folder,
        modified=modified,
        owner=owner,
    )


def _mark_killed(folder: Path, record: dict[str, Any]) -> dict[str, Any]:
    """Record as Failed a job whose owner died before it could say how the job ended."""
    now = datetime.now(timezone.utc).isoformat(timespec="seconds")
    record = {"TrainingJobName": folder.name, **record}
    record.update(
        TrainingJobStatus="Failed",
        SecondaryStatus="Failed",
        FailureReason=KILLED,
        TrainingEndTime=record.get("TrainingEndTime") or now,
    )
    try:
        write_private(folder / "describe.json", json.dumps(record, indent=2, default=str) + "\n")
    except OSError:
        pass  # not ours to write (another user's folder): shown as Failed all the same
    return record


def list_jobs() -> list[LocalJobEntry]:
    """smmpi's local jobs, newest first (folders without smmpi's marker are not listed)."""
    root = jobs_root()
    if not root.is_dir():
        return []
    if not os.environ.get("SMMPI_LOCAL_JOBS"):
        tighten_dir(root.parent)
        tighten_dir(root)
    entries = [_entry(p) for p in root.iterdir() if p.is_dir() and not p.is_symlink()]
    found = [e for e in entries if e is not None]
    for entry in found:
        tighten(entry.folder)
    return sorted(found, key=lambda e: e.modified, reverse=True)


#: The most of a local job's describe.json that smmpi reads back
RECORD_CAP = 1 << 20


def local_record(name: str) -> tuple[dict[str, Any], Path] | None:
    """Local job ``name``'s record (its ``describe.json``; a job killed before it could write
    its end is Failed) and its folder; None: smmpi has no local job of that name. ``name`` is a
    checked job name."""
    folder = jobs_root() / name
    if folder.is_symlink() or not folder.is_dir():
        return None
    entry = _entry(folder)
    if entry is None:
        return None
    try:
        data = read_regular(folder / "describe.json", "local job", RECORD_CAP, follow=False)
        record = json.loads(data)
    except (FileRefused, ValueError):
        record = None
    if not isinstance(record, dict):  # not written yet, or not smmpi's
        record = {"CreationTime": entry.created or None}
    return {**record, "TrainingJobName": name, "TrainingJobStatus": entry.status}, folder


def stop_local(name: str) -> str | None:
    """Stop local job ``name`` as Ctrl-C in its terminal would: SIGTERM to the smmpi process
    that runs it (its pid and start time recorded in the marker); it stops every rank and
    records the job Stopped. None: smmpi has no local job of that name."""
    folder = jobs_root() / name
    entry = None if folder.is_symlink() or not folder.is_dir() else _entry(folder)
    if entry is None:
        return None
    if not entry.running:
        return f"{name} (a local job) already {entry.status}; nothing to stop"
    try:
        os.kill(int(entry.owner.split()[0]), signal.SIGTERM)
    except ProcessLookupError:  # it ended meanwhile
        return f"{name} (a local job) has just ended; `smmpi status {name}` shows how"
    return f"{name}: stop requested (a local job); `smmpi status {name}` shows when it has stopped"


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
