"""Submission benchmarks (issue 3): dry-run wall time against importing the SDK, and planning.

    python benchmarks/bench_submit.py [--repeat N] [--write]

Figures are medians of N alternating runs taken in one go, printed as ratios.
Both commands run in the same environment: no AWS credentials and the
instance metadata service disabled, because ``import sagemaker`` alone asks it
for credentials when none are configured, which would slow the baseline
(smmpi keeps that lookup off for its dry runs).
``--write`` replaces the "## Submission (issue 3)" section of benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
RESULTS = ROOT / "benchmarks" / "RESULTS.md"
SECTION = "## Submission (issue 3)"
DRY_RUN = [str(BIN / "smmpi"), "submit", "demo", "--instances", "3", "--ppn", "2", "--dry-run"]
IMPORT_SDK = [sys.executable, "-c", "import sagemaker"]
HELP = [str(BIN / "smmpi"), "--help"]

PLAN_CODE = """
import time, statistics
t0 = time.perf_counter()
from smmpi.sdk.session import import_sdk
import_sdk()
t1 = time.perf_counter()
from smmpi.spec import MPIJob
def one():
    start = time.perf_counter()
    job = MPIJob("demo", instances=64, ppn=96, instance_type="ml.m5.24xlarge",
                 region="us-west-2")
    plan = job.plan()
    assert plan.world_size == 6144
    return time.perf_counter() - start
first = one()
warm = statistics.median(one() for _ in range(5))
print(f"{t1 - t0:.3f} {first:.3f} {warm:.3f}")
"""


def clean_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "SMMPI_"))}
    env.update(
        SAGEMAKER_SUPPRESS_V2_WARNING="1",
        AWS_EC2_METADATA_DISABLED="true",
        AWS_CONFIG_FILE="/nonexistent",
        AWS_SHARED_CREDENTIALS_FILE="/nonexistent",
        SMMPI_CONFIG="/nonexistent/smmpi.json",
        PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
    )
    return env


def wall(cmd: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    return time.perf_counter() - start


def cpu(cmd: list[str], env: dict[str, str]) -> float:
    """User+system CPU seconds of one run: steadier than wall time on a shared machine."""
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--write", action="store_true", help="update benchmarks/RESULTS.md")
    args = parser.parse_args()
    env = clean_env()
    wall(DRY_RUN, env)  # warm the file cache and .pyc files
    wall(IMPORT_SDK, env)
    dry, imp, hlp, dry_cpu, imp_cpu = [], [], [], [], []
    for _ in range(args.repeat):
        dry.append(wall(DRY_RUN, env))
        imp.append(wall(IMPORT_SDK, env))
        hlp.append(wall(HELP, env))
        dry_cpu.append(cpu(DRY_RUN, env))
        imp_cpu.append(cpu(IMPORT_SDK, env))
    d, i, h = statistics.median(dry), statistics.median(imp), statistics.median(hlp)
    best = min(dry) / min(imp)
    cpu_ratio = statistics.median(dry_cpu) / statistics.median(imp_cpu)
    out = subprocess.run(
        [sys.executable, "-c", PLAN_CODE], env=env, check=True, capture_output=True, text=True
    ).stdout.split()
    sdk_import, first, warm = (float(x) for x in out)
    ratio = d / i
    lines = [
        f"- dry run `{' '.join(['smmpi', *DRY_RUN[1:]])}`: median {d:.2f} s "
        f'vs `python -c "import sagemaker"` {i:.2f} s -> **{ratio:.2f}x** (target <= 1.5x); '
        f"best of each {min(dry):.2f} s vs {min(imp):.2f} s -> {best:.2f}x; "
        f"CPU time {statistics.median(dry_cpu):.2f} s vs {statistics.median(imp_cpu):.2f} s "
        f"-> {cpu_ratio:.2f}x",
        f"- `smmpi --help`: median {h:.2f} s (the SDK is not imported)",
        f"- planning 64 x 96 (`MPIJob(...).plan()`, world size 6144) after the SDK import "
        f"({sdk_import:.2f} s): first {first:.3f} s, then median {warm:.3f} s (target < 1 s)",
    ]
    for line in lines:
        print(line)
    if args.write:
        write(lines, args.repeat)
    return 0 if ratio <= 1.5 and first < 1.0 else 1


def write(lines: list[str], repeat: int) -> None:
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    body = [
        SECTION,
        "",
        f"Measured {when} on {platform.machine()} / Python {platform.python_version()} "
        f"({os.cpu_count()} CPUs, shared machine), medians of {repeat} alternating runs, "
        "no AWS credentials, metadata service disabled for both commands.",
        "Command: `python benchmarks/bench_submit.py --write`",
        "",
        *lines,
        "",
    ]
    text = RESULTS.read_text() if RESULTS.exists() else "# Benchmark results\n\n"
    if SECTION in text:
        head, _, rest = text.partition(SECTION)
        nxt = rest.find("\n## ")
        tail = rest[nxt + 1 :] if nxt >= 0 else ""
        text = head + "\n".join(body) + ("\n" + tail if tail else "")
    else:
        text = text.rstrip("\n") + "\n\n" + "\n".join(body)
    RESULTS.write_text(text)


if __name__ == "__main__":
    sys.exit(main())
