"""Files the container and SageMaker leave on each instance, around the program's run.

- ``/opt/ml/output/success`` and ``failure``: ``trainer.train`` writes ``success``
  on every instance whose entry returned, and ``failure`` with the toolkit's
  text on algo-1 when mpirun failed; workers end normally, so they write
  ``success`` then too (:mod:`smmpi.toolkit.failure`). A run stopped by a
  timeout or an interrupt leaves neither: the container was stopped.
- ``/opt/ml/checkpoints`` (``CheckpointConfig``): SageMaker fills it on every
  instance from the checkpoint URI before the program starts, and syncs it back
  to that URI. Here the URI's content is the ``checkpoints`` folder of the newest
  local job with the same ``CheckpointConfig.S3Uri``; each run syncs every
  instance's folder into its own job's ``checkpoints``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from smmpi.archives import tar_dirs
from smmpi.errors import BadInput
from smmpi.ops.local_jobs import list_jobs
from smmpi.toolkit.failure import error_classes, failure_text
from smmpi.toolkit.hosts import HostDirs, on_host
from smmpi.trees import Entry, copy_tree, entries

#: CheckpointConfig.LocalPath's default (the SDK's checkpoint_local_path).
CHECKPOINTS = "/opt/ml/checkpoints"
#: The local job's copy of what its instances synced to the checkpoint URI.
SYNCED = "checkpoints"


def write_status_files(
    hosts: Sequence[HostDirs],
    status: str,
    command: Sequence[str],
    returncode: int | None,
    message: str,
    image: str,
) -> None:
    """``success``/``failure`` on each instance as the toolkit leaves them after ``status``."""
    if status not in ("Completed", "Failed"):
        return
    for index, dirs in enumerate(hosts):
        if status == "Failed" and index == 0:
            if not dirs.failure.exists():  # the toolkit never replaces a program's own
                code = returncode if returncode else 1
                text = failure_text(command, code, message, error_classes(image))
                _write(dirs.failure, text)
        else:
            _write(dirs.output / "success", "")


def _write(path: Path, text: str) -> None:
    """A file the container writes, in a folder the ranks could write to: never via a link."""
    if path.is_symlink():
        path.unlink()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def tar_output_data(hosts: Sequence[HostDirs], archive: Path, run_dir: Path) -> None:
    """``output.tar.gz``: every instance's ``output/data``, merged (``data/...``), and nothing
    else of ``output`` (not ``failure``, ``success`` or ``intermediate``); read below
    ``run_dir`` without following a link out of the instance (:mod:`smmpi.trees`)."""
    tar_dirs([d.output_data for d in hosts], archive, below=run_dir, prefix="data/")


def checkpoint_uri(request: Mapping[str, Any]) -> str | None:
    return (request.get("CheckpointConfig") or {}).get("S3Uri") or None


def checkpoint_dir(request: Mapping[str, Any], dirs: HostDirs) -> Path | None:
    """The instance's ``CheckpointConfig.LocalPath`` in its tree (None without a config)."""
    if checkpoint_uri(request) is None:
        return None
    local = str((request.get("CheckpointConfig") or {}).get("LocalPath") or CHECKPOINTS)
    path = on_host(local, dirs)
    if path == local:
        raise BadInput(
            "CheckpointConfig.LocalPath", local, "a folder under /opt/ml (each emulated instance's)"
        )
    return Path(path)


def _previous(uri: str, this_job: str) -> Path | None:
    """What a checkpoint URI holds here: the newest other local job's synced folder for it."""
    for entry in list_jobs():
        folder = entry.folder / SYNCED
        if entry.name == this_job or not folder.is_dir():
            continue
        try:
            record = json.loads((entry.folder / "describe.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if (record.get("CheckpointConfig") or {}).get("S3Uri") == uri:
            return folder
    return None


def seed_checkpoints(request: Mapping[str, Any], folder: Path) -> Path | None:
    """The job's ``checkpoints`` folder, holding what its checkpoint URI holds at the start.

    None without a CheckpointConfig. The instances are filled from it
    (:func:`restore_checkpoints`) and synced back into it (:func:`sync_checkpoints`).
    """
    uri = checkpoint_uri(request)
    if uri is None:
        return None
    target = folder / SYNCED
    previous = _previous(uri, folder.name)
    target.mkdir(mode=0o700, exist_ok=True)
    if previous is not None:
        copy_tree(previous, previous, target)
    _private(target)
    return target


def restore_checkpoints(request: Mapping[str, Any], dirs: HostDirs, seeded: Path | None) -> None:
    """Create the instance's checkpoint folder, filled as SageMaker fills it from the URI."""
    target = checkpoint_dir(request, dirs)
    if target is None or seeded is None:
        return
    target.mkdir(parents=True, exist_ok=True)
    copy_tree(seeded, seeded, target)


def sync_checkpoints(request: Mapping[str, Any], hosts: Sequence[HostDirs], folder: Path) -> None:
    """What each instance wrote to its checkpoint folder, uploaded into the job's ``checkpoints``.

    As SageMaker uploads new and changed files only, a file an instance left as
    restored does not replace what another instance wrote. Each instance's folder is
    read below the job's ``hosts`` without following a link out of it, and links are
    copied as links (:func:`smmpi.trees.copy_tree`).
    """
    target = folder / SYNCED
    if not target.is_dir() or target.is_symlink():
        return
    seeded = _stamps(target)

    def changed(entry: Entry) -> bool:
        return _stamp(entry.info) != seeded.get(entry.name)

    for dirs in hosts:
        source = checkpoint_dir(request, dirs)
        if source is not None:
            copy_tree(folder / "hosts", source, target, changed)
    _private(target)


def _stamp(info: os.stat_result) -> tuple[int, int]:
    return (info.st_mtime_ns, info.st_size)


def _stamps(root: Path) -> dict[str, tuple[int, int]]:
    """Each file under ``root`` (relative path) with its modification time and size."""
    return {e.name: _stamp(e.info) for e in entries(root, root) if not e.is_dir}


def _private(root: Path) -> None:
    """Folders 0700 and files 0600, as smmpi keeps its files (links are left alone)."""
    os.chmod(root, 0o700)
    for entry in entries(root, root):
        if entry.is_dir or entry.is_file:
            os.chmod(entry.base, 0o700 if entry.is_dir else 0o600, dir_fd=entry.parent)
