"""The SLURM test cluster: up and down, submit to RUNNING, and demo 3x2 against a local run.

Needs Debian's SLURM (`make slurm`) and root. Brings up its own cluster in a temporary
folder (``SMMPI_SLURM_DIR``, ``SMMPI_CONFIG``), takes it down at the end, and prints a JSON
summary on the last line. Runs alternate (SLURM, local) so machine noise hits both alike.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
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


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    runs = parser.parse_args().runs
    # smmpi's bytecode, as an installed package has it (PYTHONDONTWRITEBYTECODE=1 would
    # otherwise have every command compile smmpi's modules again)
    compileall.compile_dir(str(Path(__file__).resolve().parents[1] / "smmpi"), quiet=1)
    smmpi = str(BIN / "smmpi")
    with tempfile.TemporaryDirectory(prefix="smmpi-bench-slurm-") as tmp:
        folder = Path(tmp)
        env = _env(folder)
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
                submit = [smmpi, "submit", "demo", "-N", "3", "-n", "2", *SLURM, "--wait"]
                slurm.append(_timed(submit, env, folder)[0])
                local.append(_timed([smmpi, "run", "demo", "-N", "3", "-n", "2"], env, folder)[0])
        finally:
            _timed([smmpi, "slurm", "down"], env, folder)
    med = statistics.median
    summary = {
        "runs": runs,
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
        "targets": {"up_plus_down_s": 3.0, "submit_to_running_s": 1.0, "ratio": 1.3},
    }
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
