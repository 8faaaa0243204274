"""Each instance has its own /dev/shm, as each container has.

Open MPI names its shared-memory segments in /dev/shm by hostname and job id, and both are the
same in every pod (algo-k, and a PID inside the pod's namespace). With the machine's /dev/shm
shared, two runs at once mapped each other's segments: ranks died of SIGSEGV or hung.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tests.helpers import BIN, base_env


def test_two_runs_at_once_on_isolated_hosts_both_complete(tmp_path: Path) -> None:
    env = {**base_env(tmp_path), "SMMPI_ISOLATION": "hosts"}
    for attempt in range(3):
        runs = [
            subprocess.Popen(
                [str(BIN / "smmpi"), "run", "demo", "--instances", "3", "--ppn", "2"],
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            )
            for _ in range(2)
        ]
        for run in runs:
            out, _ = run.communicate(timeout=120)
            assert run.returncode == 0, f"attempt {attempt}:\n{out[-2000:]}"
            assert "demo: all 6 ranks verified their results" in out


def test_a_segment_in_an_instances_dev_shm_is_not_the_machines(tmp_path: Path) -> None:
    program = tmp_path / "shm.py"
    program.write_text(
        "import os\nfrom mpi4py import MPI\n"
        "open(f'/dev/shm/smmpi-shm-probe-{MPI.COMM_WORLD.Get_rank()}', 'w').write('x')\n"
        "print('listed', sorted(f for f in os.listdir('/dev/shm') if 'probe' in f))\n"
    )
    env = {**base_env(tmp_path), "SMMPI_ISOLATION": "hosts"}
    done = subprocess.run(
        [str(BIN / "smmpi"), "run", str(program), "--instances", "2", "--ppn", "1"],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "listed ['smmpi-shm-probe-0']" in done.stdout
    assert "listed ['smmpi-shm-probe-1']" in done.stdout
    assert not [f for f in os.listdir("/dev/shm") if "smmpi-shm-probe" in f]
