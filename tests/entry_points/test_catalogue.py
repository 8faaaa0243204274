"""The entry-point catalogue under real mpirun, at several world sizes.

Each program runs as users run it (``mpirun -np K python -m mpi4py prog.py``)
from a scratch directory, so its model and output dirs land there. The
programs verify themselves and exit non-zero on a wrong result; these tests
check the exit code, the ordered summary and the files they write.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from tests.helpers import ROOT, base_env, processes_left

EP = ROOT / "entry_points"
BIN = Path(sys.executable).parent
MPIRUN = str(BIN / "mpirun") if (BIN / "mpirun").exists() else "mpirun"


@dataclass
class Run:
    returncode: int
    stdout: str
    stderr: str
    seconds: float
    timed_out: bool = False


def mpirun(
    program: str,
    ranks: int,
    cwd: Path,
    *args: str,
    timeout: float = 120,
    env: dict[str, str] | None = None,
) -> Run:
    """Run an entry point under real mpirun; on timeout end the whole launch.

    mpirun gets its own session; on timeout it receives SIGTERM, which Open MPI
    forwards to every rank (ranks sit in process groups of their own, so a
    group kill of mpirun's group alone would orphan them), then SIGKILL.
    """
    cmd = [MPIRUN, "--oversubscribe", "-np", str(ranks), sys.executable, "-m", "mpi4py"]
    cmd += [str(EP / f"{program}.py"), *args]
    run_env = base_env(cwd) if env is None else env
    start = time.monotonic()
    proc = subprocess.Popen(
        cmd,
        cwd=cwd,
        env=run_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=timeout)
        return Run(proc.returncode, out, err, time.monotonic() - start)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            out, err = proc.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
        return Run(proc.returncode, out, err, time.monotonic() - start, timed_out=True)


def ok(run: Run) -> str:
    assert run.returncode == 0, (
        f"exit {run.returncode}\nstdout:\n{run.stdout}\nstderr:\n{run.stderr}"
    )
    return run.stdout


def rank_lines(out: str, title: str) -> list[str]:
    """The summary lines printed under ``title`` by ``report``."""
    lines = out.splitlines()
    start = lines.index(title) + 1
    block = []
    for line in lines[start:]:
        if not line.startswith("  rank "):
            break
        block.append(line)
    return block


def ranks_in(block: list[str]) -> list[int]:
    return sorted({int(m.group(1)) for line in block if (m := re.match(r"  rank (\d+) ", line))})


# ---------------------------------------------------------------- collectives


@pytest.mark.parametrize("ranks", [2, 5])
def test_collectives(tmp_path: Path, ranks: int) -> None:
    out = ok(mpirun("collectives", ranks, tmp_path))
    assert f"collectives: all {ranks} ranks verified their results" in out
    for title in (
        "pickle API (any Python object)",
        "buffer API (NumPy arrays, typed)",
        "user-defined reductions (MPI.Op.Create)",
    ):
        assert ranks_in(rank_lines(out, title)) == list(range(ranks))
    total = ranks * (ranks - 1) // 2
    pickle = rank_lines(out, "pickle API (any Python object)")
    assert f"reduce {total + 100 * ranks}," in pickle[0]
    assert f"alltoall from {list(range(ranks))}" in pickle[-1]
    user = rank_lines(out, "user-defined reductions (MPI.Op.Create)")
    assert all(f"dict allreduce {{'v': {total}}}" in line for line in user)
    buffer = rank_lines(out, "buffer API (NumPy arrays, typed)")
    assert f"Alltoall {[10 * i + ranks - 1 for i in range(ranks)]}" in buffer[-1]


@pytest.mark.parametrize("program", ["collectives", "alltoall", "nonblocking", "bench"])
def test_world_size_one_is_refused_clearly(tmp_path: Path, program: str) -> None:
    run = mpirun(program, 1, tmp_path)
    assert run.returncode != 0
    assert f"{program}.py: world size 1 is not supported (needs >= 2)" in run.stderr


# ---------------------------------------------------------- data_parallel_sum


@pytest.mark.parametrize(("ranks", "n"), [(2, 1_000_001), (4, 10), (6, 1_000_003), (4, 3)])
def test_data_parallel_sum_uneven(tmp_path: Path, ranks: int, n: int) -> None:
    out = ok(mpirun("data_parallel_sum", ranks, tmp_path, "--size", str(n)))
    block = rank_lines(out, "Scatterv + Reduce")
    assert ranks_in(block) == list(range(ranks))
    counts = [int(m.group(1)) for line in block if (m := re.search(r"summed (\d+) elements", line))]
    assert sum(counts) == n and max(counts) - min(counts) <= 1
    assert f"total of 0..{n - 1} = {n * (n - 1) // 2} (expected" in out


def test_data_parallel_sum_bad_size(tmp_path: Path) -> None:
    run = mpirun("data_parallel_sum", 2, tmp_path, "--size", "-5")
    assert run.returncode != 0
    assert "--size must be >= 0" in run.stderr


# ------------------------------------------------------------------- alltoall


@pytest.mark.parametrize(("ranks", "size"), [(2, 10), (2, 2_000_000), (8, 250_000)])
def test_alltoall_safe_at_large_sizes(tmp_path: Path, ranks: int, size: int) -> None:
    out = ok(mpirun("alltoall", ranks, tmp_path, "--size", str(size), timeout=120))
    for method in ("sendrecv", "isend"):
        block = rank_lines(out, f"alltoall by {method}")
        assert ranks_in(block) == list(range(ranks))
        for rank, line in enumerate(block):
            assert f"received {[10 * i + rank for i in range(ranks)]}" in line


def test_alltoall_unsafe_small_messages_get_through(tmp_path: Path) -> None:
    out = ok(mpirun("alltoall", 4, tmp_path, "--size", "4", "--unsafe"))
    assert ranks_in(rank_lines(out, "alltoall by unsafe")) == [0, 1, 2, 3]


def test_alltoall_unsafe_deadlocks_at_large_sizes(tmp_path: Path) -> None:
    """Blocking Send before any Recv: with 8 MB blocks nobody ever receives."""
    marker = f"--run-id={uuid.uuid4().hex}"  # ignored by the program; finds its ranks
    run = mpirun("alltoall", 4, tmp_path, "--size", "1000000", "--unsafe", marker, timeout=5)
    assert run.timed_out, f"did not hang: exit {run.returncode}\n{run.stdout}\n{run.stderr}"
    assert "alltoall by unsafe" not in run.stdout  # no rank got past the exchange
    assert processes_left(marker) == [], "ranks outlived the timeout"


def smmpi_run(tmp_path: Path, *args: str, timeout: float = 200) -> subprocess.CompletedProcess[str]:
    """The real `smmpi run` CLI: emulated SageMaker hosts on this machine."""
    cmd = [str(BIN / "smmpi"), "run", *args]
    return subprocess.run(
        cmd, cwd=tmp_path, env=base_env(tmp_path), capture_output=True, text=True, timeout=timeout
    )


def test_alltoall_unsafe_ends_at_smmpi_timeout_with_stacks(tmp_path: Path) -> None:
    run = smmpi_run(
        tmp_path, "alltoall", "--instances", "2", "--ppn", "2", "--timeout", "6",
        "--", "--size", "1000000", "--unsafe",
    )  # fmt: skip
    assert run.returncode == 124, run.stdout + run.stderr
    # Every rank's stack shows where it hangs: the blocking Send of the naive exchange.
    for rank, host in ((0, "algo-1"), (1, "algo-1"), (2, "algo-2"), (3, "algo-2")):
        assert f"--- rank {rank} ({host}) ---" in run.stderr
    assert run.stderr.count("in alltoall_unsafe") == 4, run.stderr


def test_alltoall_safe_on_emulated_hosts(tmp_path: Path) -> None:
    run = smmpi_run(
        tmp_path, "alltoall", "--instances", "3", "--ppn", "2", "--timeout", "100",
        "--", "--size", "1000000",
    )  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    for method in ("sendrecv", "isend"):
        assert run.stdout.count(f": {method}: received") == 6
    assert "rank 5 (algo-3)" in run.stdout


# ---------------------------------------------------------------- nonblocking


@pytest.mark.parametrize("ranks", [2, 4])
def test_nonblocking(tmp_path: Path, ranks: int) -> None:
    delay = 0.3
    out = ok(mpirun("nonblocking", ranks, tmp_path, "--delay", str(delay)))
    assert ranks_in(rank_lines(out, "Isend/Irecv")) == list(range(ranks))
    m = re.search(r"nonblocking: Igather ([\d.]+) s, Gather ([\d.]+) s", out)
    assert m, out
    t_igather, t_gather = float(m.group(1)), float(m.group(2))
    # Blocking: the late ranks' delays add up; non-blocking: they overlap.
    assert t_gather >= ranks * delay * 0.95
    assert t_igather < t_gather - (ranks - 1) * delay * 0.5


# ---------------------------------------------------------------------- train


def _train(tmp_path: Path, ranks: int, *args: str) -> tuple[dict[str, np.ndarray], dict, str]:
    tmp_path.mkdir(parents=True, exist_ok=True)
    out = ok(mpirun("train", ranks, tmp_path, *args))
    with np.load(tmp_path / "model" / "model.npz") as npz:
        weights = {k: npz[k] for k in npz.files}
    metrics = json.loads((tmp_path / "output" / "data" / "metrics.json").read_text())
    return weights, metrics, out


@pytest.mark.parametrize(("hidden", "ranks"), [("32", 4), ("0", 2)])
def test_train_equals_single_process(tmp_path: Path, hidden: str, ranks: int) -> None:
    args = ("--hidden", hidden, "--epochs", "60", "--seed", "3", "--min-accuracy", "0.8")
    single, single_metrics, _ = _train(tmp_path / "single", 1, *args)
    multi, metrics, out = _train(tmp_path / "multi", ranks, *args)
    assert single.keys() == multi.keys() and len(single) in (
        2,
        4,
    )  # softmax: W1, b1; MLP: also W2, b2
    diff = max(float(np.abs(single[k] - multi[k]).max()) for k in single)
    assert diff <= 1e-10
    assert metrics["world_size"] == ranks and single_metrics["world_size"] == 1
    assert metrics["test_accuracy"] == pytest.approx(single_metrics["test_accuracy"])
    assert 0.8 <= metrics["test_accuracy"] <= 1.0
    assert metrics["loss"] < metrics["initial_loss"]
    block = rank_lines(out, f"train: {metrics['model']}, 60 epochs, world size {ranks}")
    assert ranks_in(block) == list(range(ranks))
    shards = [int(m.group(1)) for line in block if (m := re.search(r"(\d+) examples", line))]
    assert sum(shards) == metrics["examples"] == 1438


def test_train_different_seed_differs(tmp_path: Path) -> None:
    """The equivalence test above could not pass by accident: seeds matter."""
    a, _, _ = _train(tmp_path / "a", 2, "--epochs", "5", "--seed", "1", "--min-accuracy", "0")
    b, _, _ = _train(tmp_path / "b", 2, "--epochs", "5", "--seed", "2", "--min-accuracy", "0")
    assert max(float(np.abs(a[k] - b[k]).max()) for k in a) > 1e-3


def test_train_reads_sagemaker_dirs_and_hyperparameters(tmp_path: Path) -> None:
    env = base_env(tmp_path)
    env["SM_MODEL_DIR"] = str(tmp_path / "sm" / "model")
    env["SM_OUTPUT_DATA_DIR"] = str(tmp_path / "sm" / "data")
    # SageMaker passes hyperparameters as --key value; unknown ones are ignored.
    run = mpirun(
        "train", 2, tmp_path, "--epochs", "3", "--min-accuracy", "0", "--foo", "1", env=env
    )
    ok(run)
    assert (tmp_path / "sm" / "model" / "model.npz").is_file()
    metrics = json.loads((tmp_path / "sm" / "data" / "metrics.json").read_text())
    assert metrics["epochs"] == 3 and metrics["world_size"] == 2


def test_train_fails_when_accuracy_is_out_of_reach(tmp_path: Path) -> None:
    run = mpirun("train", 2, tmp_path, "--epochs", "2", "--min-accuracy", "0.99")
    assert run.returncode != 0
    assert re.search(r"VerificationError: rank \d: test accuracy 0\.\d+ < 0\.99", run.stderr)
    assert not (tmp_path / "model" / "model.npz").exists()


# ---------------------------------------------------------------------- bench


@pytest.mark.parametrize(("ranks", "plot"), [(2, True), (4, False)])
def test_bench_writes_json_and_plot(tmp_path: Path, ranks: int, plot: bool) -> None:
    sizes = [8, 4096, 1 << 20]
    args = ["--sizes", "8,4K,1M", "--budget", "4M"] + ([] if plot else ["--no-plot"])
    out = ok(mpirun("bench", ranks, tmp_path, *args))
    assert ranks_in(rank_lines(out, "bench: checks")) == list(range(ranks))
    data = json.loads((tmp_path / "output" / "data" / "bench.json").read_text())
    assert data["world_size"] == ranks and data["sizes"] == sizes
    for api in ("buffer", "pickle"):
        latency = data["pingpong"][api]["latency_s"]
        bandwidth = data["pingpong"][api]["bandwidth_Bps"]
        assert len(latency) == len(bandwidth) == len(data["allreduce"][api]["seconds"]) == 3
        assert all(0 < t < 1 for t in latency)
        assert all(
            b == pytest.approx(s / t) for b, s, t in zip(bandwidth, sizes, latency, strict=True)
        )
        assert all(0 < t < 5 for t in data["allreduce"][api]["seconds"])
    assert len(data["buffer_over_pickle_bandwidth"]) == 3
    png = tmp_path / "output" / "data" / "bench.png"
    if plot:
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    else:
        assert not png.exists()
    assert re.search(r"bench: 1048576 B buffer/pickle bandwidth = [\d.]+x", out)


def test_bench_bad_sizes(tmp_path: Path) -> None:
    run = mpirun("bench", 2, tmp_path, "--sizes", "8,lots")
    assert run.returncode != 0
    assert "bench.py: bad --sizes/--budget" in run.stderr


# ------------------------------------------------------ framework rendezvous


def accuracies(out: str) -> dict[int, float]:
    return {
        int(m.group(1)): float(m.group(2))
        for m in re.finditer(r"  rank (\d+) \([^)]*\): .*test accuracy ([\d.]+)", out)
    }


@pytest.fixture(scope="module")
def framework_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[str, Path]]:
    """torch_ddp and tf_multiworker at 2 ranks with their defaults, once for the tests below."""
    runs = {}
    for program, timeout in (("torch_ddp", 180), ("tf_multiworker", 240)):
        where = tmp_path_factory.mktemp(program)
        runs[program] = (ok(mpirun(program, 2, where, timeout=timeout)), where)
    return runs


def test_torch_ddp_two_ranks(framework_runs: dict[str, tuple[str, Path]]) -> None:
    out, where = framework_runs["torch_ddp"]
    acc = accuracies(out)
    assert sorted(acc) == [0, 1]
    assert all(0.85 <= a <= 1.0 for a in acc.values()), acc
    assert len(set(acc.values())) == 1  # DDP keeps the replicas identical
    assert "torch_ddp: every rank has the same weights" in out
    assert (where / "model" / "model.pt").stat().st_size > 0
    metrics = json.loads((where / "output" / "data" / "metrics.json").read_text())
    assert metrics["world_size"] == 2
    assert metrics["test_accuracy"] == pytest.approx(acc[0], abs=1e-4)


def test_tf_multiworker_on_emulated_hosts(tmp_path: Path) -> None:
    """Under `smmpi run` each worker is its own emulated instance; TF_CONFIG uses loopback."""
    run = smmpi_run(
        tmp_path, "tf_multiworker", "--instances", "2", "--ppn", "1", "--timeout", "200",
        "--", "--epochs", "6",
    )  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    acc = accuracies(run.stdout)
    assert sorted(acc) == [0, 1] and all(0.85 <= a <= 1.0 for a in acc.values()), run.stdout
    # isolated hosts: algo-2 is a host of its own; processes mode: every host is this machine
    assert re.search(r"rank 1 \(algo-2\): worker (algo-2|127\.0\.0\.1):\d+", run.stdout), run.stdout


def test_torch_ddp_on_emulated_hosts(tmp_path: Path) -> None:
    """Under `smmpi run` (SMMPI_LOCAL=1) the two ranks are two emulated instances."""
    run = smmpi_run(
        tmp_path, "torch_ddp", "--instances", "2", "--ppn", "1", "--timeout", "170",
        "--", "--epochs", "3",
    )  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    acc = accuracies(run.stdout)
    assert sorted(acc) == [0, 1] and all(0.85 <= a <= 1.0 for a in acc.values()), run.stdout
    assert "rank 1 (algo-2)" in run.stdout


def test_tf_multiworker_two_ranks(framework_runs: dict[str, tuple[str, Path]]) -> None:
    out, where = framework_runs["tf_multiworker"]
    acc = accuracies(out)
    assert sorted(acc) == [0, 1]
    assert all(0.85 <= a <= 1.0 for a in acc.values()), acc
    assert len(set(acc.values())) == 1  # the strategy keeps the workers identical
    assert "tf_multiworker: every worker has the same weights" in out
    metrics = json.loads((where / "output" / "data" / "metrics.json").read_text())
    workers = metrics["cluster"]["worker"]
    # One worker per rank, each on its own agreed port: nothing hard-coded.
    assert len(workers) == 2 and len(set(workers)) == 2
    assert all(re.fullmatch(r"[\w.-]+:\d+", w) for w in workers)
    assert (where / "model" / "model.npz").is_file()


def test_torch_and_tf_reach_the_same_band(framework_runs: dict[str, tuple[str, Path]]) -> None:
    """Same data, same split, same small MLP: both frameworks land in one band on every rank."""
    accs = [a for out, _ in framework_runs.values() for a in accuracies(out).values()]
    assert len(accs) == 4
    assert all(0.9 <= a <= 1.0 for a in accs), accs
    assert max(accs) - min(accs) <= 0.05, accs


RENDEZVOUS_PROBE = """
import json, os, sys
from mpi4py import MPI
from smmpi_runtime import tf_config
config = tf_config(MPI.COMM_WORLD)
everyone = MPI.COMM_WORLD.gather(config, root=0)
if MPI.COMM_WORLD.Get_rank() == 0:
    print(json.dumps(everyone))
"""


@pytest.mark.parametrize(
    ("extra_env", "expected_host"),
    [
        ({}, "127.0.0.1"),  # plain mpirun, every rank here: loopback
        ({"SMMPI_LOCAL": "1", "SM_HOSTS": '["algo-1", "algo-2"]'}, "127.0.0.1"),
    ],
)
def test_tf_config_agrees_on_distinct_ports(
    tmp_path: Path, extra_env: dict[str, str], expected_host: str
) -> None:
    """tf_config at 4 ranks: one cluster spec for all, one worker per rank, no port twice."""
    probe = tmp_path / "probe.py"
    probe.write_text(RENDEZVOUS_PROBE)
    env = base_env(tmp_path)
    env.update(extra_env, PYTHONPATH=str(EP))
    cmd = [MPIRUN, "--oversubscribe", "-np", "4", sys.executable, "-m", "mpi4py", str(probe)]
    run = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    configs = json.loads(run.stdout.strip().splitlines()[-1])
    workers = configs[0]["cluster"]["worker"]
    assert all(c["cluster"]["worker"] == workers for c in configs)
    assert [c["task"] for c in configs] == [{"type": "worker", "index": i} for i in range(4)]
    assert len(set(workers)) == 4
    assert {w.rsplit(":", 1)[0] for w in workers} == {expected_host}
    assert all(0 < int(w.rsplit(":", 1)[1]) < 65536 for w in workers)


def test_framework_entry_points_pick_their_estimator(tmp_path: Path) -> None:
    """A SageMaker job for torch_ddp runs in a PyTorch image, tf_multiworker in a TensorFlow one."""
    for entry, image in (
        ("torch_ddp", "pytorch-training"),
        ("tf_multiworker", "tensorflow-training"),
    ):
        cmd = [str(BIN / "smmpi"), "submit", entry, "--instances", "2", "--ppn", "1"]
        cmd += ["--dry-run", "--json"]
        run = subprocess.run(
            cmd, cwd=tmp_path, env=base_env(tmp_path), capture_output=True, text=True, timeout=120
        )
        assert run.returncode == 0, run.stderr
        plan = json.loads(run.stdout)
        assert image in plan["request"]["AlgorithmSpecification"]["TrainingImage"]
        assert plan["world_size"] == 2
