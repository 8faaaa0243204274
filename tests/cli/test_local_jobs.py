"""A local job (``submit --local``) through the commands that operate jobs, with no AWS region:
``smmpi logs`` reads its ranks' files, ``smmpi stop`` stops it as Ctrl-C in its terminal would.
(``smmpi status`` and ``smmpi metrics`` of a local job: tests/cli/test_metrics.py.)"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

from tests.helpers import BIN, base_env, smmpi, write


def _env(tmp_path: Path) -> dict[str, str]:
    (tmp_path / "tmp").mkdir(exist_ok=True)
    return {
        **base_env(tmp_path),
        "TMPDIR": str(tmp_path / "tmp"),
        "SMMPI_LOCAL_JOBS": str(tmp_path / "jobs"),
    }


def test_smmpi_logs_of_a_local_job_reads_its_ranks_files(tmp_path: Path) -> None:
    """``smmpi logs JOB`` of a failed local job, with no AWS region: each rank under its
    header, one rank's lines bare, and --follow ends with the job's state and exit code."""
    env = _env(tmp_path)
    script = write(
        tmp_path / "fails.py",
        "from mpi4py import MPI\nrank = MPI.COMM_WORLD.Get_rank()\nprint('hello from', rank)\n"
        "if rank == 1:\n    raise ValueError('rank one gives up')\n",
    )
    argv = ["submit", str(script), "-N", "2", "-n", "1", "--local", "--job-name", "fails"]
    assert smmpi(argv, env, cwd=tmp_path, timeout=300).returncode == 1
    shown = smmpi(["logs", "fails"], env, cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    out = shown.stdout.splitlines()
    assert out[:2] == ["==> rank 0 (algo-1) <==", "hello from 0"]
    # rank 1's stdout and stderr reach its file through two pipes: their order is not kept
    assert out[2] == "==> rank 1 (algo-2) <==" and "hello from 0" not in out[2:]
    assert {"hello from 1", "ValueError: rank one gives up"} <= set(out[3:])
    assert shown.stderr.strip() == "smmpi: rank 1 (algo-2) failed: ValueError: rank one gives up"
    one = smmpi(["logs", "fails", "--rank", "0"], env, cwd=tmp_path)
    assert one.stdout.splitlines() == ["hello from 0"]
    followed = smmpi(["logs", "fails", "--follow"], env, cwd=tmp_path)
    assert followed.returncode == 1 and followed.stderr.splitlines()[-1] == "smmpi: fails Failed"
    on_two = smmpi(["logs", "fails", "--host", "algo-2"], env, cwd=tmp_path).stdout.splitlines()
    assert on_two[0] == "==> rank 1 (algo-2) <==" and "hello from 1" in on_two[1:]
    assert "hello from 0" not in on_two
    elsewhere = smmpi(["logs", "fails", "--host", "algo-3"], env, cwd=tmp_path)
    assert elsewhere.returncode == 2
    assert elsewhere.stderr.strip() == (
        "smmpi: invalid host: 'algo-3'; allowed: algo-1 to algo-2 (fails's instances)"
    )
    beyond = smmpi(["logs", "fails", "--rank", "2"], env, cwd=tmp_path)
    assert beyond.returncode == 2
    assert beyond.stderr.strip() == "smmpi: invalid rank: 2; allowed: 0 to 1 (fails runs 2 ranks)"


def test_smmpi_stop_of_a_running_local_job_stops_it_as_ctrl_c_would(tmp_path: Path) -> None:
    env = _env(tmp_path)
    script = write(
        tmp_path / "slow.py",
        "import time\nfrom mpi4py import MPI\nprint('started', flush=True)\ntime.sleep(300)\n",
    )
    argv = [BIN / "smmpi", "submit", script, "-N", "2", "-n", "1", "--local", "--job-name", "slow"]
    with subprocess.Popen(
        argv, env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    ) as running:
        record = tmp_path / "jobs" / "slow" / "describe.json"
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:  # until the ranks run
            if record.is_file() and json.loads(record.read_text()).get("SecondaryStatus") == (
                "Training"
            ):
                break
            time.sleep(0.2)
        stopped = smmpi(["stop", "slow"], env, cwd=tmp_path)
        assert stopped.returncode == 0, stopped.stderr
        assert stopped.stdout.strip() == (
            "slow: stop requested (a local job); `smmpi status slow` shows when it has stopped"
        )
        _, err = running.communicate(timeout=60)
    assert "smmpi: local job slow Stopped" in err, err
    rows = dict(r.split(None, 1) for r in smmpi(["status", "slow"], env).stdout.splitlines())
    assert rows["status"] == "Stopped"
    again = smmpi(["stop", "slow"], env, cwd=tmp_path)
    assert (again.returncode, again.stdout.strip()) == (
        0,
        "slow (a local job) already Stopped; nothing to stop",
    )
