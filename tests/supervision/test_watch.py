"""The rank watcher (``watch.py rank``), run by path as mpirun runs it: it sets the emulated
host's variables, records how its rank ended and ends the same way."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from smmpi.runners.local.hostfiles import WATCH

RANK = 2


def _watcher(tmp_path: Path, rank: str, host_env: bytes = b"SM_CURRENT_HOST=algo-2") -> list[str]:
    host_file = tmp_path / "algo-2.env"
    host_file.write_bytes(host_env)
    argv = [sys.executable, "-I", "-S", str(WATCH), "rank", str(host_file), "--"]
    return [*argv, sys.executable, "-c", rank]


def _env(tmp_path: Path, rank: str | None = str(RANK)) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("OMPI_COMM_WORLD_RANK", "PMIX_RANK")}
    env["SMMPI_STACK_DIR"] = str(tmp_path)
    if rank is not None:
        env["OMPI_COMM_WORLD_RANK"] = rank
    return env


def _record(tmp_path: Path, rank: object = RANK) -> dict[str, object]:
    row = json.loads((tmp_path / f"rank-{rank}.exit").read_text(encoding="utf-8"))
    assert isinstance(row, dict)
    return row


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            return f.read().rsplit(") ", 1)[1].split()[0] != "Z"  # a zombie has ended
    except OSError:
        return False


def _gone(pid: int) -> bool:
    deadline = time.monotonic() + 60
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not _alive(pid)


def _kill(pid: int) -> None:
    """End a rank its watcher left (its parent is then another process: init's to reap)."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


@contextlib.contextmanager
def _running(tmp_path: Path, rank: str) -> Iterator[tuple[subprocess.Popen[str], int]]:
    """A watcher and its rank, which prints its pid first; both gone at the end, however the
    test ends."""
    proc = subprocess.Popen(
        _watcher(tmp_path, rank), env=_env(tmp_path), stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    child = 0
    try:
        child = int(proc.stdout.readline())
        yield proc, child
    finally:
        proc.kill()
        proc.wait()
        if child:
            _kill(child)


def test_the_rank_gets_its_hosts_variables_and_its_exit_code_is_recorded(tmp_path: Path) -> None:
    rank = (
        "import json, os, sys\n"
        "names = ('SM_CURRENT_HOST', 'SM_HOSTS', 'X')\n"
        "print(json.dumps([os.environ.get(n) for n in names]), flush=True)\n"
        "sys.exit(3)\n"
    )
    hosts = b'SM_CURRENT_HOST=algo-2\0SM_HOSTS=["algo-1", "algo-2"]\0X=a=b\nc'
    proc = subprocess.run(
        _watcher(tmp_path, rank, hosts),
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 3, proc.stderr
    assert json.loads(proc.stdout) == ["algo-2", '["algo-1", "algo-2"]', "a=b\nc"]
    row = _record(tmp_path)
    assert isinstance(row["pid"], int) and isinstance(row["time"], float)
    assert isinstance(row["eth0_route"], bool)
    assert (row["rank"], row["code"], row["signal"]) == (RANK, 3, None)
    assert not list(tmp_path.glob("*.tmp"))  # written whole, then renamed


def test_a_rank_killed_by_a_signal_ends_its_watcher_with_that_signal(tmp_path: Path) -> None:
    rank = "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)"
    proc = subprocess.run(_watcher(tmp_path, rank), env=_env(tmp_path), timeout=120)
    assert proc.returncode == -signal.SIGSEGV
    row = _record(tmp_path)
    assert (row["code"], row["signal"]) == (None, signal.SIGSEGV)


def test_a_rank_of_unknown_number_is_recorded_with_none(tmp_path: Path) -> None:
    env = _env(tmp_path, rank=None)
    env["PMIX_RANK"] = "5"  # Open MPI 5 names it so
    assert subprocess.run(_watcher(tmp_path, "pass"), env=env, timeout=120).returncode == 0
    assert _record(tmp_path, 5)["rank"] == 5
    del env["PMIX_RANK"]
    assert subprocess.run(_watcher(tmp_path, "pass"), env=env, timeout=120).returncode == 0
    assert _record(tmp_path, "unknown")["rank"] is None


def test_a_program_that_cannot_start_exits_127_and_says_so(tmp_path: Path) -> None:
    argv = _watcher(tmp_path, "pass")
    argv[argv.index("--") + 1] = str(tmp_path / "no-such-python")
    proc = subprocess.run(argv, env=_env(tmp_path), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 127
    assert f"smmpi: cannot start {tmp_path / 'no-such-python'}:" in proc.stderr
    assert _record(tmp_path)["code"] == 127


def test_a_signal_to_the_watcher_reaches_a_rank_in_a_process_group_of_its_own(
    tmp_path: Path,
) -> None:
    rank = (
        "import os, signal, sys, time\n"
        "os.setsid()\n"
        "signal.signal(signal.SIGUSR2, lambda *_: sys.exit(7))\n"
        "print(os.getpid(), flush=True)\n"
        "time.sleep(120)\n"
    )
    with _running(tmp_path, rank) as (proc, _):
        os.kill(proc.pid, signal.SIGUSR2)
        assert proc.wait(timeout=60) == 7
        assert _record(tmp_path)["code"] == 7


def test_the_rank_sees_its_watcher_die_through_the_pipe_it_holds(tmp_path: Path) -> None:
    """The rank's hook tells a killed watcher by the end of the pipe it inherits."""
    rank = (
        "import os\n"
        "fd = int(os.environ['SMMPI_LAUNCHER_FD'])\n"
        "print(os.getpid(), flush=True)\n"
        "os.read(fd, 1)\n"  # returns at end of file: no process holds the write end
        "print('launcher gone', flush=True)\n"
    )
    with _running(tmp_path, rank) as (proc, child):
        assert proc.stdout is not None
        proc.send_signal(signal.SIGKILL)
        assert proc.wait(timeout=60) == -signal.SIGKILL
        assert proc.stdout.readline() == "launcher gone\n"
        assert _gone(child)
        assert not (tmp_path / f"rank-{RANK}.exit").exists()  # its watcher could not say


def test_wrong_arguments_get_the_usage() -> None:
    proc = subprocess.run(
        [sys.executable, "-I", "-S", str(WATCH), "rank", "hosts"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1
    assert proc.stderr.startswith("usage: watch.py run --parent PID --record DIR")
