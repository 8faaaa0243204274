"""What leaves an emulated instance: only its own files, never what a link of a rank leads to.

A hostile rank replaces the folders SageMaker takes out of the instance (``/opt/ml/model``,
``output/data``, the checkpoint folder) with links to this machine's ``/etc``, or plants
links inside them. The real CLI runs ``submit --local`` in both local modes; the job's
archives and its synced checkpoints are then read back.
"""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

import pytest

from tests.helpers import smmpi

MODES = ["hosts", "processes"]
ETC_FILES = {p.name for p in Path("/etc").iterdir()}

#: rank 0 of algo-1 swaps the folder ``TARGET`` (an SM_* variable) for a link to /etc.
SWAP = """\
import os, shutil
from mpi4py import MPI
comm = MPI.COMM_WORLD
comm.Barrier()
if comm.Get_rank() == 0:
    folder = {target}
    shutil.rmtree(folder)
    os.symlink("/etc", folder)
comm.Barrier()
"""


def _job(env: dict[str, str], tmp_path: Path, program: str, *extra: str) -> tuple[int, str, Path]:
    script = tmp_path / "hostile.py"
    script.write_text(program)
    done = smmpi(["submit", str(script), "-N", "2", "-n", "2", "--local", *extra], env, timeout=240)
    assert "Traceback" not in done.stderr, done.stderr
    (folder,) = (Path(env["SMMPI_LOCAL_JOBS"])).iterdir()
    return done.returncode, done.stderr, folder


def _members(archive: Path) -> dict[str, tarfile.TarInfo]:
    with tarfile.open(archive) as tar:
        return {m.name: m for m in tar.getmembers()}


def _last_line(stderr: str) -> str:
    return stderr.strip().splitlines()[-1]


@pytest.mark.parametrize("mode", MODES)
def test_a_model_folder_linked_to_etc_fails_the_job_and_packs_nothing_of_etc(
    fault_env: dict[str, str], tmp_path: Path, mode: str
) -> None:
    fault_env["SMMPI_ISOLATION"] = mode
    program = SWAP.format(target='os.environ["SM_MODEL_DIR"]')
    code, stderr, folder = _job(fault_env, tmp_path, program)
    assert code == 1, stderr
    line = _last_line(stderr)
    assert "algo-1's /opt/ml/model is a link (to /etc)" in line, line
    record = json.loads((folder / "describe.json").read_text())
    assert record["TrainingJobStatus"] == "Failed"
    assert "algo-1's /opt/ml/model is a link (to /etc)" in record["FailureReason"]
    assert "ModelArtifacts" not in record
    assert not (folder / "model.tar.gz").exists()
    names = {Path(n).name for n in _members(folder / "output.tar.gz")}
    assert not names & {"shadow", "passwd", "hostname"}


@pytest.mark.parametrize("mode", MODES)
def test_output_data_linked_to_etc_fails_the_job_and_packs_nothing_of_etc(
    fault_env: dict[str, str], tmp_path: Path, mode: str
) -> None:
    fault_env["SMMPI_ISOLATION"] = mode
    program = SWAP.format(target='os.environ["SM_OUTPUT_DATA_DIR"]')
    code, stderr, folder = _job(fault_env, tmp_path, program)
    assert code == 1, stderr
    assert "algo-1's /opt/ml/output/data is a link (to /etc)" in _last_line(stderr)
    assert not (folder / "output.tar.gz").exists()
    assert not (folder / "model.tar.gz").exists()


LINKS_INSIDE = """\
import os
from mpi4py import MPI
comm = MPI.COMM_WORLD
model = os.environ["SM_MODEL_DIR"]
if comm.Get_rank() == 0:
    os.makedirs(os.path.join(model, "ckpt-3"))
    with open(os.path.join(model, "ckpt-3", "weights"), "w") as f:
        f.write("w")
    os.symlink("ckpt-3", os.path.join(model, "latest"))
    os.symlink("/etc", os.path.join(model, "etc"))
    os.symlink("/etc/shadow", os.path.join(model, "shadow"))
comm.Barrier()
"""


def test_links_inside_the_model_folder_are_packed_as_links(
    fault_env: dict[str, str], tmp_path: Path
) -> None:
    code, stderr, folder = _job(fault_env, tmp_path, LINKS_INSIDE)
    assert code == 0, stderr
    members = _members(folder / "model.tar.gz")
    assert members["ckpt-3/weights"].isfile()
    assert members["latest"].issym() and members["latest"].linkname == "ckpt-3"
    assert members["etc"].issym() and members["etc"].linkname == "/etc"
    assert members["shadow"].issym() and members["shadow"].size == 0
    assert not [n for n in members if n.startswith("etc/")]


def _checkpoint_program(outside: Path) -> str:
    """algo-1 plants a link ``sub`` to ``outside`` and a link ``etc`` to /etc; algo-2 writes
    a real ``sub/written``: its sync must not land through algo-1's link."""
    return f"""\
import os, json
from mpi4py import MPI
comm = MPI.COMM_WORLD
folder = os.path.join(os.environ["SM_MODEL_DIR"], "..", "checkpoints")
host = json.load(open(os.environ["SM_INPUT_CONFIG_DIR"] + "/resourceconfig.json"))["current_host"]
if comm.Get_rank() % 2 == 0:
    if host == "algo-1":
        os.symlink({str(outside)!r}, os.path.join(folder, "sub"))
        os.symlink("/etc", os.path.join(folder, "etc"))
    else:
        os.makedirs(os.path.join(folder, "sub"))
        with open(os.path.join(folder, "sub", "written"), "w") as f:
            f.write(host)
comm.Barrier()
"""


@pytest.mark.parametrize("mode", MODES)
def test_checkpoints_sync_links_as_links_and_never_writes_through_one(
    fault_env: dict[str, str], tmp_path: Path, mode: str
) -> None:
    fault_env["SMMPI_ISOLATION"] = mode
    outside = tmp_path / "outside"
    outside.mkdir()
    extra = ("--checkpoint-s3-uri", "s3://bucket/ckpt")
    code, stderr, folder = _job(fault_env, tmp_path, _checkpoint_program(outside), *extra)
    assert code == 0, stderr
    assert list(outside.iterdir()) == []
    synced = folder / "checkpoints"
    assert (synced / "etc").is_symlink()
    assert (synced / "sub" / "written").read_text() == "algo-2"  # the later host's folder


@pytest.mark.parametrize("mode", MODES)
def test_a_checkpoint_folder_linked_to_etc_fails_the_job_and_syncs_nothing_of_etc(
    fault_env: dict[str, str], tmp_path: Path, mode: str
) -> None:
    fault_env["SMMPI_ISOLATION"] = mode
    program = SWAP.format(
        target='os.path.join(os.path.dirname(os.environ["SM_MODEL_DIR"]), "checkpoints")'
    )
    code, stderr, folder = _job(
        fault_env, tmp_path, program, "--checkpoint-s3-uri", "s3://bucket/ckpt"
    )
    assert code == 1, stderr
    assert "algo-1's /opt/ml/checkpoints is a link (to /etc)" in _last_line(stderr)
    synced = {p.name for p in (folder / "checkpoints").rglob("*")}
    assert not synced & ETC_FILES


DEEP = """\
import os
from mpi4py import MPI
comm = MPI.COMM_WORLD
if comm.Get_rank() == 0:
    os.chdir(os.environ["SM_MODEL_DIR"])
    for _ in range(300):
        os.mkdir("d" * 20)
        os.chdir("d" * 20)
    with open("weights", "w") as f:
        f.write("w")
comm.Barrier()
"""


def test_a_model_tree_deeper_than_path_max_is_named_as_the_jobs_failure(
    fault_env: dict[str, str], tmp_path: Path
) -> None:
    code, stderr, folder = _job(fault_env, tmp_path, DEEP)
    assert code == 1, stderr
    line = _last_line(stderr)
    assert "Errno" not in line, line
    assert line.startswith("smmpi: algo-1's /opt/ml/model/dddddddddddddddddddd/"), line
    assert "over 4095 bytes (Linux's PATH_MAX)" in line, line
    record = json.loads((folder / "describe.json").read_text())
    assert record["TrainingJobStatus"] == "Failed"
    assert "PATH_MAX" in record["FailureReason"]
    assert not (folder / "model.tar.gz").exists()
