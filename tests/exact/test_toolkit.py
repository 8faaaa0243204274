"""Exact mode with the real sagemaker-training toolkit: `train` on every instance, end to end.

Each run costs the toolkit's own 30 s sleep after mpirun (a success) or its failure path; the
suite runs two jobs.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

from tests.helpers import ROOT, base_env, processes_left, smmpi, write

PROBE = Path(__file__).with_name("probe_view.py")
VENV = os.environ.get("SMMPI_TOOLKIT_VENV", str(ROOT / ".venv-toolkit"))
#: The TensorFlow images' sagemaker-training 4.8.3, layered over VENV (make .toolkit-tf).
TF = os.environ.get("SMMPI_TOOLKIT_TF", str(ROOT / ".toolkit-tf"))


def toolkit_env(tmp_path: Path) -> dict[str, str]:
    """A run in exact mode with the toolkits make test builds (not smmpi's own build)."""
    env = base_env(tmp_path)
    (tmp_path / "tmp").mkdir()
    env.pop("SMMPI_ISOLATION", None)
    toolkits = {"SMMPI_TOOLKIT_VENV": VENV, "SMMPI_TOOLKIT_TF": TF}
    return {**env, "TMPDIR": str(tmp_path / "tmp"), **toolkits}


def _algo_1(tmp_path: Path) -> Path:
    return next((tmp_path / "tmp").glob("smmpi-run-*")) / "algo-1" / "opt" / "ml"


def test_the_toolkits_train_runs_the_demo_on_every_instance(tmp_path: Path) -> None:
    done = smmpi(
        ["run", "demo", "-N", "2", "-n", "2", "--exact", "--keep"],
        toolkit_env(tmp_path),
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    first = done.stderr.splitlines()[1]
    assert first.startswith("smmpi: exact mode: every instance runs the container's start")
    assert "the toolkit's own waits add about 30-60 s" in first
    assert "demo: all 4 ranks verified their results" in done.stdout
    # the toolkit's own steps, on both instances: the worker waited for algo-1's sshd and
    # for orted, algo-1 wrote the status file on algo-2 through ssh
    assert "MPI Master online, creating SSH daemon." in done.stderr
    assert "Orted process exited" in done.stderr
    assert "args=['ssh', 'algo-2', 'touch', '/tmp/done.algo-1'], returncode=0" in done.stderr
    assert done.stderr.count("Reporting training SUCCESS") == 2
    assert (_algo_1(tmp_path) / "output" / "success").is_file()
    cache = Path(tmp_path / "home" / ".smmpi" / "toolkits")
    assert stat.S_IMODE(cache.stat().st_mode) == 0o700
    assert processes_left(str(tmp_path)) == []
    assert "stray" not in done.stderr  # the instances' sshd ends with them, as a container's


def test_a_failed_rank_is_named_on_top_of_the_toolkits_failure(tmp_path: Path) -> None:
    program = write(
        tmp_path / "fails.py",
        "from mpi4py import MPI\n"
        "if MPI.COMM_WORLD.Get_rank() == 3:\n"
        "    raise ValueError('broken on rank three')\n"
        "MPI.COMM_WORLD.Barrier()\n",
    )
    argv = ["run", str(program), "-N", "2", "-n", "2", "--exact", "--keep"]
    done = smmpi(argv, toolkit_env(tmp_path), timeout=300)
    assert done.returncode != 0
    assert "sagemaker-training-toolkit ERROR    Reporting training FAILURE" in done.stderr
    assert done.stderr.strip().splitlines()[-2:][0].startswith("smmpi: rank 3 (algo-2) failed")
    failure = (_algo_1(tmp_path) / "output" / "failure").read_text()
    assert failure.startswith("ExecuteUserScriptError:\nExitCode 1\n"), failure
    assert "broken on rank three" in failure
    assert processes_left(str(tmp_path)) == []


def test_every_rank_the_toolkit_starts_ends_with_its_watchers_record(tmp_path: Path) -> None:
    """A rank that dies without a word (``os._exit``: no exception for the rank hook) is
    recorded by its watcher, as under smmpi's own line, and named by that record."""
    program = write(
        tmp_path / "dies.py",
        "import os\nfrom mpi4py import MPI\n"
        "if MPI.COMM_WORLD.Get_rank() == 2:\n"
        "    os._exit(3)\n"
        "MPI.COMM_WORLD.Barrier()\n",
    )
    argv = ["run", str(program), "-N", "2", "-n", "2", "--exact", "--keep"]
    done = smmpi(argv, toolkit_env(tmp_path), timeout=300)
    assert done.returncode == 1, done.stderr
    stacks = next((tmp_path / "tmp").glob("smmpi-run-*")) / ".smmpi" / "stacks"
    ends = {p.name: json.loads(p.read_text()) for p in stacks.glob("rank-*.exit")}
    assert ends["rank-2.exit"]["code"] == 3, ends
    assert ends["rank-2.exit"]["rank"] == 2
    assert any(line.startswith("smmpi: rank 2 (algo-2) ") for line in done.stderr.splitlines())
    assert processes_left(str(tmp_path)) == []


def test_a_toolkit_venv_without_the_toolkit_is_refused_before_anything_runs(
    tmp_path: Path,
) -> None:
    env = {**toolkit_env(tmp_path), "SMMPI_TOOLKIT_VENV": str(tmp_path)}
    done = smmpi(["run", "demo", "-N", "2", "-n", "2", "--exact"], env)
    assert done.returncode == 2
    assert done.stderr.strip() == (
        f"smmpi: invalid SMMPI_TOOLKIT_VENV: '{tmp_path}'; "
        "allowed: a venv with sagemaker-training installed, or none (sshd only)"
    )
    assert list((tmp_path / "tmp").iterdir()) == []


#: What the toolkit's start adds to a rank's environment that the fast mode's does not:
#: its gethostname shim (``-x LD_PRELOAD``), and what importing TensorFlow sets in the
#: framework toolkit's process (TensorFlow, joblib, scikit-learn), which mpirun passes on.
TOOLKIT_ONLY = {
    "LD_PRELOAD",
    "ENABLE_RUNTIME_UPTIME_TELEMETRY",
    "HDF5_PLUGIN_PATH",
    "KMP_DUPLICATE_LIB_OK",
    "KMP_INIT_AT_FORK",
    "TF2_BEHAVIOR",
    "TPU_ML_PLATFORM",
    "TPU_ML_PLATFORM_VERSION",
}
#: Values that differ, each for a reason docs/TOOLKIT.md gives.
TOOLKIT_VALUES = {
    "OMPI_ARGV",
    "OMPI_COMMAND",  # the interpreter's name: python3, or python3.11 as one venv's script said
    "PATH",
    "PYTHONPATH",
    "SM_MODULE_DIR",
    "SM_TRAINING_ENV",
}


def test_ranks_observe_the_fast_modes_start_but_for_the_documented_differences(
    tmp_path: Path,
) -> None:
    from tests.exact.test_differential import (
        FAST_ONLY,
        PER_RUN,
        SSH_SESSION,
        _limits_and_etc_environment,
        _normalised,
    )

    def views(name: str, exact: bool) -> dict[int, dict[str, Any]]:
        (tmp_path / name).mkdir()
        env = toolkit_env(tmp_path / name)
        if not exact:
            env.pop("SMMPI_TOOLKIT_VENV")
            env.pop("SMMPI_TOOLKIT_TF")
        argv = ["run", str(PROBE), "-N", "2", "-n", "2", "--keep", *(["--exact"] * exact)]
        done = smmpi(argv, env, timeout=300)
        assert done.returncode == 0, done.stderr
        run = next((tmp_path / name / "tmp").glob("smmpi-run-*"))
        run_dir = str(run)
        out = {}
        for line in done.stdout.splitlines():
            if "VIEW " in line:
                tag, _, rank = line.partition("VIEW ")
                found = list(run.glob(f"algo-*/opt/ml/model/view-{rank}.json"))
                view = {**json.loads(found[0].read_text()), "tag": tag}
                view["env"] = {
                    k: _normalised(v, run_dir)
                    for k, v in view["env"].items()
                    if not k.startswith(PER_RUN)
                }
                out[view["rank"]] = {k: _normalised(v, run_dir) for k, v in view.items()}
        assert sorted(out) == [0, 1, 2, 3], done.stdout
        return out

    fast, exact = views("fast", False), views("exact", True)
    for rank in range(4):
        a, b = fast[rank], exact[rank]
        env_a, env_b = a.pop("env"), b.pop("env")
        assert a.pop("executable") != b.pop("executable")  # the toolkit's interpreter
        _limits_and_etc_environment(a, b, b["hostname"] != "algo-1")
        assert a == b, rank  # argv, cwd, hostname, uid, umask, /opt/ml, output tag
        assert set(env_a) - set(env_b) == FAST_ONLY
        worker = SSH_SESSION if b["hostname"] != "algo-1" else set()
        assert set(env_b) - set(env_a) == TOOLKIT_ONLY | worker, rank
        differ = {k for k in set(env_a) & set(env_b) if env_a[k] != env_b[k]}
        unexpected = {k: (env_a[k], env_b[k]) for k in differ - TOOLKIT_VALUES}
        assert not unexpected, (rank, unexpected)  # each name with its fast and exact values


def test_a_hang_under_the_toolkit_ends_at_timeout_with_every_ranks_stack(tmp_path: Path) -> None:
    program = write(
        tmp_path / "hangs.py",
        "import time\nfrom mpi4py import MPI\n\n"
        "def wait_forever():\n    time.sleep(600)\n\nwait_forever()\n",
    )
    argv = ["run", str(program), "-N", "2", "-n", "1", "--exact", "--timeout", "60"]
    done = smmpi(argv, toolkit_env(tmp_path), timeout=300)
    assert done.returncode == 124, done.stderr
    for rank, host in ((0, "algo-1"), (1, "algo-2")):
        section = done.stderr.split(f"--- rank {rank} ({host}) ---\n", 1)[1].split("---", 1)[0]
        assert 'File "hangs.py", line 5 in wait_forever' in section, done.stderr
    assert processes_left(str(tmp_path)) == []
