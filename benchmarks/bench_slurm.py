"""The SLURM test cluster: up and down, submit to RUNNING, and demo 3x2 against a local run.

Needs Debian's SLURM (`make slurm`) and root. Brings up its own cluster in a temporary
folder (``SMMPI_SLURM_DIR``, ``SMMPI_CONFIG``), takes it down at the end, and prints a JSON
summary on the last line. Runs alternate (SLURM, local) so machine noise hits both alike,
and each timed SLURM job starts on an empty queue (the submit-to-RUNNING job has ended).

``--split`` runs one demo 3x2 of each kind with timestamps instead: the SLURM job's steps
from slurmctld's and slurmd's logs, the ranks' own clocks (Python's start, ``MPI_Init``'s
end, the demo's end) and the moments smmpi printed a state, against the same program run
with ``smmpi run``.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BIN = Path(sys.executable).parent
SLURM = ["--backend", "slurm", "--profile", "local"]


def _env(folder: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "SMMPI_"))}
    env.update(
        PATH=f"{BIN}{os.pathsep}{env.get('PATH', '')}",
        OMPI_ALLOW_RUN_AS_ROOT="1",
        OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
        SMMPI_SLURM_DIR=str(folder / "cluster"),
        SMMPI_CONFIG=str(folder / "config.json"),
        SMMPI_LOCAL_JOBS=str(folder / "local-jobs"),
    )
    return env


def _timed(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[float, str]:
    start = time.perf_counter()
    done = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return time.perf_counter() - start, done.stdout


def _to_running(env: dict[str, str], cwd: Path) -> tuple[float, float]:
    """From `submit --no-wait` until squeue says RUNNING (or the job already ended), and the
    part of it that `submit` itself took (smmpi's start, the job's checks, staging, sbatch)."""
    squeue = Path(env["SMMPI_SLURM_DIR"]) / "bin" / "squeue"
    start = time.perf_counter()
    argv = [str(BIN / "smmpi"), "submit", "demo", "-N", "3", "-n", "2", *SLURM, "--no-wait"]
    submitted, out = _timed(argv, env, cwd)
    job = out.strip().split()[-1]
    while time.perf_counter() - start < 60:
        state = subprocess.run(
            [str(squeue), "-h", "-j", job, "-o", "%T"], env=env, capture_output=True, text=True
        ).stdout.strip()
        if state in ("RUNNING", "") or state.startswith("COMPLET"):
            return time.perf_counter() - start, submitted
        time.sleep(0.02)
    raise SystemExit(f"job {job} did not start within 60 s")


# The demo, with each rank's own clock: its first line, MPI_Init's end, the demo's end.
PROBE = """import sys, time
START = time.time()
from mpi4py import MPI
INIT = time.time()
import demo
code = demo.main()
MPI.COMM_WORLD.Barrier()
print(f"SPLIT {MPI.COMM_WORLD.Get_rank()} {START:.3f} {INIT:.3f} {time.time():.3f}", flush=True)
sys.exit(code)
"""
DEMO_FILES = ("demo", "broadcast", "gather_reduce_broadcast", "point_to_point", "smmpi_runtime")
_SPLIT = re.compile(r"SPLIT ([0-9]+) ([0-9.]+) ([0-9.]+) ([0-9.]+)")
_STAMP = re.compile(r"^\[(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)\.(\d{3})\] (.*)$")


def _probe(folder: Path) -> Path:
    probe = folder / "probe"
    probe.mkdir()
    entry_points = Path(__file__).resolve().parents[1] / "entry_points"
    for name in DEMO_FILES:
        shutil.copy(entry_points / f"{name}.py", probe)
    (probe / "split_probe.py").write_text(PROBE)
    return probe


def _stamped(
    argv: list[str], env: dict[str, str], cwd: Path
) -> tuple[float, list[tuple[float, str]]]:
    """Run ``argv``; when it started, and each line it printed (stdout and stderr) with when."""
    start = time.time()
    proc = subprocess.Popen(
        argv, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    assert proc.stdout is not None
    lines = [(time.time(), line.rstrip("\n")) for line in proc.stdout]
    lines.append((time.time(), f"exit {proc.wait()}"))
    return start, lines


def _ranks(texts: list[str]) -> tuple[float, float, float]:
    """(first rank's first line, last rank's MPI_Init end, last rank's demo end)."""
    found = [m.groups() for text in texts for m in _SPLIT.finditer(text)]
    if len(found) != 6:
        raise SystemExit(f"expected 6 ranks' SPLIT lines, found {len(found)}")
    return (
        min(float(f[1]) for f in found),
        max(float(f[2]) for f in found),
        max(float(f[3]) for f in found),
    )


def _daemon_log(path: Path, *needles: str) -> list[float]:
    """When each line of a daemon's log that holds every needle was written."""
    found = []
    for line in path.read_text(errors="replace").splitlines():
        match = _STAMP.match(line)
        if match and all(n in match.group(3) for n in needles):
            stamp = time.mktime(time.strptime(match.group(1), "%Y-%m-%dT%H:%M:%S"))
            found.append(stamp + int(match.group(2)) / 1000)
    return found


def _said(lines: list[tuple[float, str]], needle: str) -> float:
    return next(t for t, line in lines if needle in line)


def _slurm_split(env: dict[str, str], folder: Path, probe: Path) -> dict[str, float]:
    argv = [str(BIN / "smmpi"), "submit", str(probe / "split_probe.py"), "--source-dir"]
    argv += [str(probe), "-N", "3", "-n", "2", *SLURM, "--wait"]
    start, lines = _stamped(argv, env, folder)
    job = lines[0][1].strip()
    log = Path(env["SMMPI_SLURM_DIR"]) / "log"
    ctld, nodes = log / "slurmctld.log", sorted(log.glob("slurmd-node*.log"))
    shared = Path(env["SMMPI_SLURM_DIR"]) / "shared"
    logs = shared.glob("*/logs/rank-*.log")
    rank_logs = [p.read_text() for p in logs if (p.parents[1] / f"slurm-{job}.out").exists()]
    first, init, done = _ranks(rank_logs)
    steps = [t for n in nodes for t in _daemon_log(n, f"StepId={job}.0", "launch task")]
    ends = [t for n in nodes for t in _daemon_log(n, f"[{job}.0] done with job")]
    batch = [t for n in nodes for t in _daemon_log(n, f"Launching batch job {job} ")]
    points = {
        "sbatch accepted (slurmctld)": _daemon_log(ctld, f"JobId={job} ", "submit_batch")[0],
        "smmpi printed PENDING": _said(lines, "PENDING"),
        "job started (slurmctld: RUNNING)": _daemon_log(ctld, f"JobId={job} ", "Started")[0],
        "smmpi printed RUNNING": _said(lines, "RUNNING"),
        "batch script started (slurmd)": min(batch),
        "srun step launched on the nodes (first)": min(steps),
        "ranks' first line (first)": first,
        "MPI_Init done (last rank)": init,
        "demo done (last rank)": done,
        "step ended on the nodes (last)": max(ends),
        "job complete (slurmctld)": _daemon_log(ctld, f"JobId={job} ", "done")[0],
        "smmpi printed COMPLETED": _said(lines, "COMPLETED"),
        "smmpi exited": lines[-1][0],
    }
    return {k: round(v - start, 3) for k, v in points.items()}


def _local_split(env: dict[str, str], folder: Path, probe: Path) -> dict[str, float]:
    argv = [str(BIN / "smmpi"), "run", str(probe / "split_probe.py"), "--source-dir"]
    argv += [str(probe), "-N", "3", "-n", "2"]
    start, lines = _stamped(argv, env, folder)
    first, init, done = _ranks([line for _, line in lines])
    points = {
        "smmpi's first line": lines[0][0],
        "ranks' first line (first)": first,
        "MPI_Init done (last rank)": init,
        "demo done (last rank)": done,
        "smmpi exited": lines[-1][0],
    }
    return {k: round(v - start, 3) for k, v in points.items()}


def split(folder: Path, env: dict[str, str], smmpi: str) -> None:
    """One demo 3x2 of each kind, with each moment's seconds from the command's start."""
    probe = _probe(folder)
    _timed([smmpi, "slurm", "up", "--nodes", "3", "--cpus", "2"], env, folder)
    try:
        found = {
            "slurm": _slurm_split(env, folder, probe),
            "local": _local_split(env, folder, probe),
        }
    finally:
        _timed([smmpi, "slurm", "down"], env, folder)
    for kind, points in found.items():
        print(f"{kind}:")
        for name, seconds in points.items():
            print(f"  {seconds:7.3f} s  {name}")
    print(json.dumps(found))


def _ended(env: dict[str, str], cwd: Path) -> None:
    """Until the cluster's queue is empty (the submit-to-RUNNING job has ended)."""
    squeue = Path(env["SMMPI_SLURM_DIR"]) / "bin" / "squeue"
    deadline = time.perf_counter() + 60
    while time.perf_counter() < deadline:
        queue = subprocess.run(
            [str(squeue), "-h"], env=env, cwd=cwd, capture_output=True, text=True
        )
        if queue.returncode == 0 and not queue.stdout.strip():
            return
        time.sleep(0.2)
    raise SystemExit("the queue did not empty within 60 s")


def measure(folder: Path, env: dict[str, str], smmpi: str, runs: int) -> dict[str, object]:
    up = [smmpi, "slurm", "up", "--nodes", "3", "--cpus", "2"]
    ups, downs, running, submits, slurm, local = [], [], [], [], [], []
    for _ in range(runs):
        ups.append(_timed(up, env, folder)[0])
        downs.append(_timed([smmpi, "slurm", "down"], env, folder)[0])
    _timed(up, env, folder)
    try:
        for _ in range(runs):
            to_running, submitted = _to_running(env, folder)
            running.append(to_running)
            submits.append(submitted)
            _ended(env, folder)
            submit = [smmpi, "submit", "demo", "-N", "3", "-n", "2", *SLURM, "--wait"]
            slurm.append(_timed(submit, env, folder)[0])
            local.append(_timed([smmpi, "run", "demo", "-N", "3", "-n", "2"], env, folder)[0])
    finally:
        _timed([smmpi, "slurm", "down"], env, folder)
    med = statistics.median
    return {
        "runs": runs,
        "load_average_1min_at_end": os.getloadavg()[0],
        "up_median_s": round(med(ups), 3),
        "down_median_s": round(med(downs), 3),
        "up_plus_down_s": round(med(ups) + med(downs), 3),
        "submit_to_running_median_s": round(med(running), 3),
        "of_it_submit_command_median_s": round(med(submits), 3),
        "of_it_queued_median_s": round(med(map(float.__sub__, running, submits)), 3),
        "demo_3x2_slurm_median_s": round(med(slurm), 3),
        "demo_3x2_local_hosts_median_s": round(med(local), 3),
        "ratio_slurm_over_local": round(med(slurm) / med(local), 3),
        "ratio_paired_median": round(med(map(float.__truediv__, slurm, local)), 3),
        "slurm_runs_s": [round(x, 3) for x in slurm],
        "local_runs_s": [round(x, 3) for x in local],
        "targets": {"up_plus_down_s": 3.0, "submit_to_running_s": 1.0, "ratio": 1.3},
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--split", action="store_true", help="one timed run of each, in parts")
    args = parser.parse_args()
    # smmpi's bytecode, as an installed package has it (PYTHONDONTWRITEBYTECODE=1 would
    # otherwise have every command compile smmpi's modules again)
    compileall.compile_dir(str(Path(__file__).resolve().parents[1] / "smmpi"), quiet=1)
    smmpi = str(BIN / "smmpi")
    print(f"load average at the start: {os.getloadavg()}", file=sys.stderr)
    with tempfile.TemporaryDirectory(prefix="smmpi-bench-slurm-") as tmp:
        folder = Path(tmp)
        env = _env(folder)
        if args.split:
            split(folder, env, smmpi)
        else:
            print(json.dumps(measure(folder, env, smmpi, args.runs)))


if __name__ == "__main__":
    main()
