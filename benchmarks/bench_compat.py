"""mpi4py's own demos (from its sdist) under ``smmpi run -N 2 -n 2`` beside plain mpirun.

    python benchmarks/bench_compat.py [--runs 3] [--mode hosts|processes]

Each figure is the median wall time of ``--runs`` alternating runs in this one invocation
(plain ``mpirun --oversubscribe -np 4``, the same with no shared memory between ranks, then
smmpi on one emulated instance, ``-N 1 -n 4``, then on two, ``-N 2 -n 2``), so all four see the
same machine. The target is smmpi within
+0.5 s of plain mpirun for each demo. The first row is an empty program
(``from mpi4py import MPI``): smmpi's fixed cost per run.

Each demo is one file, and runs as a user would run it: ``smmpi run DEMO.py``, which lays out
the script alone as the code dir (as the SDK uploads an entry point with no ``source_dir``).
The last row runs helloworld.py with ``--source-dir`` the whole ``demo/`` folder (158 files,
every demo of mpi4py's), which each instance then gets a copy of: the cost of a large code dir.

The one-instance column runs the same container mpirun line with every rank on algo-1, so
its ranks talk through shared memory as plain mpirun's do: its gap is smmpi's own cost. The
two-instance column adds what crossing instances costs: TCP over each instance's eth0, as
between SageMaker instances. The load average is printed before and after: figures taken
under load are not the target's.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.compat.conftest import fetch_sdist  # noqa: E402

BIN = Path(sys.executable).parent
EMPTY = "empty.py"  # written next to the demos: smmpi's fixed cost per run
WHOLE_FOLDER = "helloworld.py, --source-dir demo/"  # every instance copies 158 files
DEMOS = [
    (EMPTY, ""),
    ("helloworld.py", ""),
    ("mandelbrot/mandelbrot.py", ""),
    ("compute-pi/cpi-cco.py", "100\n"),
    ("nxtval/nxtval-threads.py", ""),
    ("futures/run_mandelbrot.py", ""),
    ("osu_barrier.py", ""),
    ("osu_alltoall.py", ""),
    (WHOLE_FOLDER, ""),
]


def _timed(argv: list[str], cwd: Path, stdin: str, env: dict[str, str]) -> float:
    start = time.monotonic()
    r = subprocess.run(argv, cwd=cwd, input=stdin, env=env, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed: {r.stderr[-800:]}")
    return time.monotonic() - start


def _load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--mode", choices=("hosts", "processes"), default="hosts")
    options = parser.parse_args()
    version = importlib.metadata.version("mpi4py")
    demo_dir = fetch_sdist("mpi4py", version, ROOT / ".pytest_cache" / "compat") / "demo"
    env = {
        **os.environ,
        "PATH": f"{BIN}:{os.environ.get('PATH', '')}",
        "OMPI_ALLOW_RUN_AS_ROOT": "1",
        "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
        "SMMPI_ISOLATION": options.mode,
    }
    # as an installed smmpi runs: its modules' bytecode cached (pip compiles it at install)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    (demo_dir / EMPTY).write_text("from mpi4py import MPI  # noqa: F401\n")
    print(f"load average before: {_load()}")
    head = "mpirun -np 4 | same, --mca btl ^vader | smmpi -N 1 -n 4 | + | smmpi -N 2 -n 2 | +"
    print(f"| demo (mpi4py {version}) | {head} |")
    print("|---|---|---|---|---|---|---|")
    for demo, stdin in DEMOS:
        script = "helloworld.py" if demo == WHOLE_FOLDER else demo
        folder = demo_dir / Path(script).parent
        plain_argv = ["mpirun", "--oversubscribe", "-np", "4", "python", Path(script).name]
        tcp_argv = [*plain_argv[:2], "--mca", "btl", "^vader", *plain_argv[2:]]
        smmpi_argv = [str(BIN / "smmpi"), "run", Path(script).name, "--framework", "pytorch"]
        if demo == WHOLE_FOLDER:
            smmpi_argv += ["--source-dir", "."]
        one = [*smmpi_argv, "-N", "1", "-n", "4"]
        two = [*smmpi_argv, "-N", "2", "-n", "2"]
        plain, tcp, here_one, here_two = [], [], [], []
        for _ in range(options.runs):
            plain.append(_timed(plain_argv, folder, stdin, env))
            tcp.append(_timed(tcp_argv, folder, stdin, env))
            here_one.append(_timed(one, folder, stdin, env))
            here_two.append(_timed(two, folder, stdin, env))
        p, t = statistics.median(plain), statistics.median(tcp)
        h1, h2 = statistics.median(here_one), statistics.median(here_two)
        cells = [
            f"{p:.2f} s",
            f"{t:.2f} s",
            f"{h1:.2f} s",
            f"{h1 - p:+.2f} s",
            f"{h2:.2f} s",
            f"{h2 - p:+.2f} s",
        ]
        print(f"| {demo} | {' | '.join(cells)} |", flush=True)
    print(f"load average after: {_load()}")


if __name__ == "__main__":
    main()
