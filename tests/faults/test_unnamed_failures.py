"""Failures that were named late, wrongly or not at all: each named in both modes.

Each case runs the real ``smmpi`` CLI (real ``mpirun``, several ranks) in isolated hosts and
in processes mode, and checks the one line that names the failure and the exit code;
``fault_env`` checks that nothing outlives the run.
"""

from __future__ import annotations

import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

from smmpi.mpi_lines import MAX_LINE, cut_note
from tests.helpers import smmpi

HEADER = "import os, resource, sys, time\nfrom mpi4py import MPI\n"
HEADER += "comm = MPI.COMM_WORLD\nrank = comm.Get_rank()\n"
MODES = ("hosts", "processes")


def _run(
    tmp_path: Path, env: dict[str, str], mode: str, body: str, *args: str
) -> subprocess.CompletedProcess[str]:
    folder = tmp_path / "prog"
    folder.mkdir(exist_ok=True)
    prog = folder / "fault.py"
    prog.write_text(HEADER + body, encoding="utf-8")
    argv = ["run", str(prog), *args, "--timeout", "60"]
    return smmpi(argv, {**env, "SMMPI_ISOLATION": mode}, timeout=180)


def _last_line(text: str) -> str:
    lines = text.strip().splitlines()
    return lines[-1] if lines else ""


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    "fault", ["resource.setrlimit(resource.RLIMIT_NOFILE, (3, 3))", "os.chroot('/tmp')"]
)
def test_a_rank_without_descriptors_or_chrooted_is_named_at_once(
    fault: str, mode: str, fault_env: dict[str, str], tmp_path: Path
) -> None:
    """Before: the rank's hook imported what it needed only as the rank failed, which then
    failed: mpi4py never aborted, the run hung to --timeout, and the last line blamed
    SIGUSR1 (smmpi's own stack signal)."""
    body = f"if rank == 1:\n    {fault}\n    raise ValueError('boom')\ncomm.Barrier()\n"
    r = _run(tmp_path, fault_env, mode, body, "-N", "1", "-n", "2")
    assert r.returncode == 1, r.stderr
    assert _last_line(r.stderr) == "smmpi: rank 1 (algo-1) failed: ValueError: boom", r.stderr


@pytest.mark.parametrize("mode", MODES)
def test_a_rank_that_exits_0_without_mpi_finalize_is_named(
    mode: str, fault_env: dict[str, str], tmp_path: Path
) -> None:
    """Before: rank 0, or rank 2 or 3, "killed by signal 15 (SIGTERM)", which mpirun sent
    them once rank 1 had gone."""
    body = "if rank == 1:\n    time.sleep(0.3)\n    os._exit(0)\ncomm.Barrier()\n"
    r = _run(tmp_path, fault_env, mode, body, "-N", "2", "-n", "2")
    assert r.returncode == 1, r.stderr
    line = "smmpi: rank 1 (algo-1) failed: exited without MPI_Finalize (exit code 0)"
    assert _last_line(r.stderr) == line, r.stderr


@pytest.mark.parametrize("mode", MODES)
def test_ranks_that_exit_0_after_mpi_finalize_complete(
    mode: str, fault_env: dict[str, str], tmp_path: Path
) -> None:
    body = "comm.Barrier()\nMPI.Finalize()\nprint('finalized', rank, flush=True)\nos._exit(0)\n"
    r = _run(tmp_path, fault_env, mode, body, "-N", "2", "-n", "2")
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("finalized") == 4, r.stdout


def test_an_mpirun_that_starts_no_rank_is_a_failure(
    fault_env: dict[str, str], tmp_path: Path
) -> None:
    """Before: "2 ranks on 1 emulated host(s) completed in 0.0 s", exit 0. Processes mode
    only: isolated hosts refuse an mpirun that is not Open MPI 4 before the run."""
    env = {**fault_env, "SMMPI_MPIRUN": "/bin/true"}
    r = _run(tmp_path, env, "processes", "print('ran', rank)\n", "-N", "1", "-n", "2")
    assert r.returncode == 1, r.stderr
    line = "smmpi: mpirun exited 0 but no rank started (0 of 2 ranks reported)"
    assert _last_line(r.stderr) == line, r.stderr
    assert "completed" not in r.stderr


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("stream", ["stdout", "stderr"])
def test_a_rank_that_writes_100_mb_without_a_newline_is_named_at_once(
    stream: str, mode: str, fault_env: dict[str, str], tmp_path: Path
) -> None:
    """Before: named 6.6 to 7.8 s after the raise (smmpi waited 5 s for the output's reader,
    which was still rebuilding the line), and none of the 100 MB was shown. Now the line's
    last part is shown, after a note of what was cut, and the rank is named within 5 s."""
    body = (
        f"if rank == 1:\n    sys.{stream}.write('x' * 100_000_000 + 'END')\n"
        f"    sys.{stream}.flush()\n"
        "    print(f'\\nraised at {time.time()!r}', file=sys.stderr, flush=True)\n"
        "    raise ValueError('boom')\ncomm.Barrier()\n"
    )
    r = _run(tmp_path, fault_env, mode, body, "-N", "1", "-n", "2")
    ended = time.time()
    assert r.returncode == 1, r.stderr[-2000:]
    assert _last_line(r.stderr) == "smmpi: rank 1 (algo-1) failed: ValueError: boom"
    echoed = r.stdout if stream == "stdout" else r.stderr
    # the line's last MAX_LINE characters, after a note of what was cut. mpirun's own text on
    # stderr (MPI_ABORT's message) may cut into the line while the rest is still on its way: then
    # the rest follows as a line of its own. Either way no character is lost or repeated.
    note = re.escape(cut_note(0)).replace("0", r"(\d+)")
    tag = rf"\[1,mpirank:1,algo-1\]<{stream}>:"
    first = re.search(rf"{tag}{note}(x+)", echoed)
    assert first is not None, echoed[:300]
    assert int(first[1]) > 99_000_000 and len(first[2]) <= MAX_LINE
    rest = re.findall(rf"^{tag}(x+)", echoed[first.end() :], re.MULTILINE)
    assert int(first[1]) + len(first[2]) + sum(map(len, rest)) == 100_000_000
    assert all(len(xs) + 3 <= MAX_LINE for xs in rest)
    # END ends the rank's text (mpirun's own text may follow it on the same line)
    assert re.search(rf"^{tag}(?:{note})?x+END", echoed, re.MULTILINE), echoed[-3000:]
    raised = re.search(r"raised at (\d+\.\d+)", r.stderr)
    assert raised is not None, r.stderr[-2000:]
    assert ended - float(raised[1]) < 5.0


@pytest.mark.parametrize("signame", ["SIGTERM", "SIGUSR1"])
def test_a_rank_that_ends_its_instances_init_is_named(
    signame: str, fault_env: dict[str, str], tmp_path: Path
) -> None:
    """Before: "rank 0 (algo-1) failed: killed by signal 15 (SIGTERM)" (or rank 1), which
    mpirun sent it once algo-2's daemon had ended with its instance. Isolated hosts only:
    in processes mode PID 1 is this machine's init (and the program signals PID 1 only
    where it is an instance's first process). SIGKILL from inside its namespace does not
    reach it."""
    body = (
        "import signal\ncomm.Barrier()\n"
        'first = b"smmpi.instances.hosts" in open("/proc/1/cmdline", "rb").read()\n'
        f"if rank == 3 and first:\n    os.kill(1, signal.{signame})\n    time.sleep(30)\n"
        "comm.Barrier()\n"
    )
    r = _run(tmp_path, fault_env, "hosts", body, "-N", "2", "-n", "2", "--isolation", "hosts")
    assert r.returncode == 1, r.stderr
    number = getattr(signal, signame).value
    line = (
        f"smmpi: rank 3 (algo-2) failed: ended its instance's init (PID 1) with signal "
        f"{number} ({signame}); every process of algo-2 ended with it"
    )
    assert _last_line(r.stderr) == line, r.stderr
