"""`submit --api model-trainer --dry-run` against importing ModelTrainer (issue 21).

    python benchmarks/bench_model_trainer.py [--repeat N]

Medians of N alternating runs taken in one go, printed as a ratio (target <= 1.2x). Both run
without AWS credentials and with the instance metadata service off, as bench_submit.py does.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

from bench_submit import BIN, clean_env

DRY_RUN = [str(BIN / "smmpi"), "submit", "demo", "-N", "3", "-n", "2", "--dry-run"]
DRY_RUN += ["--api", "model-trainer"]
IMPORT = [sys.executable, "-c", "import sagemaker.modules.train"]


def _time(argv: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, env=clean_env(), check=True, capture_output=True)
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=7)
    repeat = parser.parse_args().repeat
    _time(IMPORT)  # warm the file cache for both
    imports, dry = [], []
    for _ in range(repeat):
        imports.append(_time(IMPORT))
        dry.append(_time(DRY_RUN))
    base, ours = statistics.median(imports), statistics.median(dry)
    print(f"import sagemaker.modules.train     {base:.3f} s")
    print(f"submit --api model-trainer --dry-run {ours:.3f} s  {ours / base:.2f}x (target <= 1.2x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
