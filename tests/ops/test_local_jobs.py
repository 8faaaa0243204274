"""Local job folders: made only under a free name, private, listed and pruned by smmpi's marker
only, and a job whose owner died marked Failed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from smmpi.errors import BadInput
from smmpi.ops import local_jobs as lj
from smmpi.ops import private_files


@pytest.fixture
def root(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    where = tmp_path / "jobs"
    monkeypatch.setenv("SMMPI_LOCAL_JOBS", str(where))
    monkeypatch.delenv(lj.KEEP_ENV, raising=False)
    return where


def _ended(folder: Path, status: str, when: float) -> None:
    private_files.write_private(folder / "describe.json", json.dumps({"TrainingJobStatus": status}))
    os.utime(folder / "describe.json", (when, when))


def test_a_folder_is_made_once_private_and_marked(root: Path) -> None:
    folder = lj.create_folder("job-a")
    assert folder == root / "job-a" and lj.made_here("job-a")
    assert (folder.stat().st_mode & 0o777) == 0o700
    assert ((folder / lj.MARKER).stat().st_mode & 0o777) == 0o600
    with pytest.raises(BadInput, match=r"^invalid job_name: 'job-a'; allowed: a name no local"):
        lj.create_folder("job-a")


def test_listing_and_pruning_touch_only_smmpis_folders(root: Path) -> None:
    for i, name in enumerate(("old", "mid", "new")):
        _ended(lj.create_folder(name), "Completed", 1000.0 + i)
    (root / "users-folder").mkdir()
    (root / "loose-file").write_text("the user's")
    assert [e.name for e in lj.list_jobs()] == ["new", "mid", "old"]
    assert lj.prune(1, spare="mid") == ["old"]
    assert sorted(p.name for p in root.iterdir()) == ["loose-file", "mid", "new", "users-folder"]
    lj.remove_folder(root / "users-folder")  # no marker: left alone
    assert (root / "users-folder").is_dir()


def test_a_job_whose_owner_died_is_marked_failed(root: Path) -> None:
    folder = lj.create_folder("orphan")
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    (folder / lj.MARKER).write_text(f"{dead.pid} 1\n")
    (entry,) = lj.list_jobs()
    assert (entry.status, entry.running) == ("Failed", False)
    record = json.loads((folder / "describe.json").read_text())
    assert record["FailureReason"] == lj.KILLED and record["TrainingJobName"] == "orphan"


def test_an_unfinished_job_of_this_process_is_discarded_an_ended_one_kept(root: Path) -> None:
    lj.create_folder("never-ran")
    assert lj.discard_unfinished("never-ran") and not (root / "never-ran").exists()
    _ended(lj.create_folder("ran"), "Failed", 1000.0)
    assert not lj.discard_unfinished("ran") and (root / "ran").is_dir()


def test_the_cap_on_kept_jobs(monkeypatch: pytest.MonkeyPatch, root: Path) -> None:
    assert lj.configured_keep() == lj.DEFAULT_KEEP
    monkeypatch.setenv(lj.KEEP_ENV, "3")
    assert lj.configured_keep() == 3
    monkeypatch.setenv(lj.KEEP_ENV, "three")
    with pytest.raises(BadInput, match=r"^invalid SMMPI_LOCAL_JOBS_KEEP: 'three'"):
        lj.configured_keep()
    for bad in (-1, True, 1.5):
        with pytest.raises(BadInput, match=r"^invalid keep: "):
            lj.check_keep(bad)


def test_looser_files_are_tightened_and_links_left_alone(root: Path, tmp_path: Path) -> None:
    folder = lj.create_folder("loose")
    (folder / "logs").mkdir(mode=0o755)
    (folder / "logs" / "rank-0.log").write_text("x")
    (folder / "logs" / "rank-0.log").chmod(0o644)
    target = tmp_path / "users"
    target.write_text("x")
    target.chmod(0o644)
    (folder / "link").symlink_to(target)
    private_files.tighten(folder)
    assert ((folder / "logs" / "rank-0.log").stat().st_mode & 0o777) == 0o600
    assert ((folder / "logs").stat().st_mode & 0o777) == 0o700
    assert (target.stat().st_mode & 0o777) == 0o644


def test_a_local_jobs_record_is_read_back_only_from_smmpis_own_folder(
    root: Path, tmp_path: Path
) -> None:
    folder = lj.create_folder("done")
    private_files.write_private(
        folder / "describe.json", json.dumps({"TrainingJobStatus": "Completed"})
    )
    record, where = lj.local_record("done") or ({}, None)
    assert where == folder
    assert (record["TrainingJobName"], record["TrainingJobStatus"]) == ("done", "Completed")
    assert lj.local_record("never-made") is None
    (root / "users-folder").mkdir()  # no marker: not a local job
    assert lj.local_record("users-folder") is None
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / lj.MARKER).write_text(f"{os.getpid()} 1\n")
    (root / "linked").symlink_to(elsewhere)  # a link to a marked folder: not followed
    assert lj.local_record("linked") is None


def test_a_record_not_written_yet_or_not_json_is_the_jobs_state_alone(root: Path) -> None:
    folder = lj.create_folder("starting")
    record, _ = lj.local_record("starting") or ({}, None)
    assert (record["TrainingJobName"], record["TrainingJobStatus"]) == ("starting", "InProgress")
    (folder / "describe.json").write_text("{not json")
    record, _ = lj.local_record("starting") or ({}, None)
    assert record["TrainingJobStatus"] == "InProgress"
