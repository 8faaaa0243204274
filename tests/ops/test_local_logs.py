"""A local job's output read back from its folder, as ``smmpi logs`` shows it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from smmpi.ops import local_jobs, private_files
from smmpi.ops.local_logs import local_log


@pytest.fixture
def folder(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.setenv("SMMPI_LOCAL_JOBS", str(tmp_path / "jobs"))
    made = local_jobs.create_folder("ran")
    record = {
        "TrainingJobStatus": "Failed",
        "ResourceConfig": {"InstanceType": "ml.c5.xlarge", "InstanceCount": 2},
        "HyperParameters": {"sagemaker_mpi_num_of_processes_per_host": "2"},
        "FailureReason": "AlgorithmError: ...\nsmmpi: rank 2 (algo-2) failed: ValueError: x",
    }
    private_files.write_private(made / "describe.json", json.dumps(record))
    (made / "logs").mkdir()
    for rank, text in ((0, "zero\n"), (2, "two\nValueError: x\n"), (10, "ten\n")):
        (made / "logs" / f"rank-{rank}.log").write_text(text)
    (made / "logs" / "mpirun.log").write_text("mpirun's own\n")
    return made


def test_each_ranks_file_is_its_lines_on_its_host_ranks_in_order(folder: Path) -> None:
    found = local_log("ran")
    assert found is not None
    st, lines = found
    assert (st.status, st.world) == ("Failed", 4)
    assert [(ln.rank, ln.host, ln.text) for ln in lines] == [
        (0, "algo-1", "zero"),
        (2, "algo-2", "two"),
        (2, "algo-2", "ValueError: x"),
        (10, "algo-6", "ten"),  # a file is a rank's whatever the record says
    ]


def test_no_local_job_is_none_and_a_linked_file_is_not_read(folder: Path, tmp_path: Path) -> None:
    assert local_log("not-ran") is None
    secret = tmp_path / "secret.txt"
    secret.write_text("not the job's\n")
    (folder / "logs" / "rank-0.log").unlink()
    (folder / "logs" / "rank-0.log").symlink_to(secret)
    found = local_log("ran")
    assert found is not None
    assert "not the job's" not in [ln.text for ln in found[1]]
