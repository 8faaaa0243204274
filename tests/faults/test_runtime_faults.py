"""Run-time faults injected into real runs: strays, deaths, blame, bounds, signals, stdin.

Each case runs the real ``smmpi`` CLI (real ``mpirun``, several ranks) on a
small faulty program and checks the one line that names the failure, the exit
code, and (through the ``fault_env`` fixture) that no process outlives the run.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from smmpi.causes import say
from tests.helpers import BIN, MotoServer, smmpi, until_ready


def _program(tmp_path: Path, body: str, name: str = "fault.py") -> Path:
    """A program alone in its own folder (so nothing else ships with it)."""
    folder = tmp_path / "prog"
    folder.mkdir(exist_ok=True)
    path = folder / name
    path.write_text(body, encoding="utf-8")
    return path


def _last_line(text: str) -> str:
    lines = text.strip().splitlines()
    return lines[-1] if lines else ""


def _nothing_created(env: dict[str, str]) -> None:
    assert not any(Path(env["TMPDIR"]).iterdir()), list(Path(env["TMPDIR"]).iterdir())
    assert not Path(env["SMMPI_LOCAL_JOBS"]).exists()


HEADER = "import os, signal, subprocess, sys, time, traceback\nfrom mpi4py import MPI\n"
HEADER += "rank = MPI.COMM_WORLD.Get_rank()\n"


def test_stray_child_does_not_hang_a_successful_run(
    fault_env: dict[str, str], tmp_path: Path
) -> None:
    prog = _program(
        tmp_path,
        HEADER + "if rank == 0:\n    subprocess.Popen(['sleep', '300'])\n"
        "MPI.COMM_WORLD.Barrier()\nprint('done', rank, flush=True)\n",
    )
    r = smmpi(["run", str(prog), "-N", "1", "-n", "2", "--timeout", "60"], fault_env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("done") == 2
    assert "stray" in r.stderr and "sleep 300" in r.stderr, r.stderr
    assert not any(Path(fault_env["TMPDIR"]).iterdir())


def test_daemon_of_a_running_rank_lives_until_its_rank_ends(
    fault_env: dict[str, str], tmp_path: Path
) -> None:
    """A double-forked process is killed once its rank has ended, not while the rank uses it."""
    prog = _program(
        tmp_path,
        HEADER + "if rank == 0:\n"
        "    out = subprocess.check_output(\n"
        "        ['sh', '-c', 'sleep 300 >/dev/null 2>&1 & echo $!'], text=True)\n"
        "    time.sleep(1.5)\n"
        "    os.kill(int(out), 0)  # still there while rank 0 runs\n"
        "    print('daemon alive', flush=True)\n"
        "MPI.COMM_WORLD.Barrier()\n",
    )
    r = smmpi(["run", str(prog), "-N", "1", "-n", "2", "--timeout", "60"], fault_env)
    assert r.returncode == 0, r.stderr
    assert "daemon alive" in r.stdout
    assert "stray process(es) left by rank 0 (algo-1): sleep 300" in r.stderr, r.stderr


def test_child_in_its_own_session_does_not_hide_the_exception(
    fault_env: dict[str, str], tmp_path: Path
) -> None:
    prog = _program(
        tmp_path,
        HEADER + "if rank == 1:\n"
        "    subprocess.Popen(['sleep', '300'], start_new_session=True)\n"
        "    raise ValueError('boom-setsid')\n"
        "MPI.COMM_WORLD.Barrier()\n",
    )
    r = smmpi(["run", str(prog), "-N", "1", "-n", "2", "--timeout", "30"], fault_env)
    assert r.returncode == 1, r.stderr
    assert _last_line(r.stderr) == "smmpi: rank 1 (algo-1) failed: ValueError: boom-setsid"


DEATHS = [
    ("os.kill(os.getpid(), signal.SIGKILL)", 1, say("sigkill").removeprefix("failed: ")),
    ("import ctypes; ctypes.string_at(0)", 2, "killed by signal 11 (SIGSEGV)"),
    ("os._exit(3)", 3, "exit code 3"),
    ("sys.stdout.flush(); os.abort()", 2, "killed by signal 6 (SIGABRT)"),
]


@pytest.mark.parametrize(("fault", "rank", "cause"), DEATHS)
def test_death_by_signal_or_exit_code_is_named(
    fault: str, rank: int, cause: str, fault_env: dict[str, str], tmp_path: Path
) -> None:
    prog = _program(
        tmp_path,
        HEADER + f"if rank == {rank}:\n    time.sleep(0.3)\n    {fault}\n"
        "MPI.COMM_WORLD.Barrier()\n",
    )
    r = smmpi(["run", str(prog), "-N", "2", "-n", "2", "--timeout", "60"], fault_env)
    assert r.returncode == 1, r.stderr
    host = f"algo-{rank // 2 + 1}"
    assert _last_line(r.stderr) == f"smmpi: rank {rank} ({host}) failed: {cause}", r.stderr


def test_mpi_abort_is_named_and_no_nul_is_echoed(fault_env: dict[str, str], tmp_path: Path) -> None:
    prog = _program(
        tmp_path,
        HEADER + "if rank == 1:\n    MPI.COMM_WORLD.Abort(5)\nMPI.COMM_WORLD.Barrier()\n",
    )
    r = smmpi(["run", str(prog), "-N", "1", "-n", "2", "--timeout", "60"], fault_env)
    assert r.returncode == 1, r.stderr
    # from the rank's own record of its Abort call (Open MPI 4.1.8 sometimes loses its notice)
    assert _last_line(r.stderr) == "smmpi: rank 1 (algo-1) failed: exit code 5 (MPI_Abort)"
    assert "\x00" not in r.stderr + r.stdout


HANDLED = (
    "if rank == 0:\n"
    "    try:\n        raise KeyError('handled-and-printed')\n"
    "    except KeyError:\n        traceback.print_exc()\n        sys.stderr.flush()\n"
)


@pytest.mark.parametrize(
    ("fault", "cause"),
    [
        ("os._exit(3)", "exit code 3"),
        ("os.kill(os.getpid(), signal.SIGKILL)", say("sigkill").removeprefix("failed: ")),
        ("raise RuntimeError('real')", "RuntimeError: real"),
    ],
)
def test_a_handled_traceback_does_not_outrank_the_rank_that_died(
    fault: str, cause: str, fault_env: dict[str, str], tmp_path: Path
) -> None:
    prog = _program(
        tmp_path,
        HEADER + HANDLED + f"if rank == 1:\n    time.sleep(1.0)\n    {fault}\n"
        "MPI.COMM_WORLD.Barrier()\n",
    )
    r = smmpi(["run", str(prog), "-N", "1", "-n", "2", "--timeout", "60"], fault_env)
    assert "handled-and-printed" in r.stderr  # the program's own output is still shown
    assert r.returncode == 1, r.stderr
    assert _last_line(r.stderr) == f"smmpi: rank 1 (algo-1) failed: {cause}", r.stderr


def test_the_first_exception_is_named_though_its_rank_was_killed_before_its_excepthook(
    fault_env: dict[str, str], tmp_path: Path
) -> None:
    """Rank 1 raises first, but its (the program's own) excepthook is slow: rank 0 raises
    later, aborts the world, and mpirun kills rank 1 before its excepthook returned."""
    prog = _program(
        tmp_path,
        HEADER + "if rank == 1:\n    sys.excepthook = lambda *a: time.sleep(60)\n"
        "    raise RuntimeError('first')\n"
        "time.sleep(1.0)\nraise RuntimeError('second')\n",
    )
    r = smmpi(["run", str(prog), "-N", "2", "-n", "1", "--timeout", "60"], fault_env)
    assert r.returncode == 1, r.stderr
    assert _last_line(r.stderr) == "smmpi: rank 1 (algo-2) failed: RuntimeError: first", r.stderr


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "1e999", "NaN"])
@pytest.mark.parametrize("command", ["run", "submit"])
def test_timeout_that_is_not_a_finite_positive_number_is_refused(
    value: str, command: str, fault_env: dict[str, str]
) -> None:
    args = ["run", "demo", "-N", "1", "-n", "2"]
    if command == "submit":
        args = ["submit", "demo", "--instances", "1", "--ppn", "2", "--local"]
    r = smmpi([*args, "--timeout", value], fault_env)
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "timeout" in lines[0] and value in lines[0], r.stderr
    _nothing_created(fault_env)


@pytest.mark.parametrize(
    ("args", "field"),
    [
        (["-N", "100000", "-n", "1"], "instances"),
        (["-N", "1", "-n", "100000"], "ppn"),
        (["-N", "200", "-n", "64"], "ranks"),
    ],
)
def test_world_beyond_the_bound_is_refused_before_anything_is_created(
    args: list[str], field: str, fault_env: dict[str, str]
) -> None:
    r = smmpi(["run", "demo", *args], fault_env, timeout=60)
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and field in lines[0], r.stderr
    _nothing_created(fault_env)


def test_submit_local_world_beyond_the_bound_is_refused(fault_env: dict[str, str]) -> None:
    args = ["submit", "demo", "--instances", "100000", "--ppn", "1", "--local"]
    r = smmpi(args, fault_env, timeout=120)
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "instances" in lines[0], r.stderr
    _nothing_created(fault_env)


@pytest.mark.machine  # 200 ranks at once take the machine: not beside other runs
def test_two_hundred_hosts_run(fault_env: dict[str, str], tmp_path: Path) -> None:
    """Every host's variables reach its rank without one huge mpirun argv."""
    prog = _program(
        tmp_path,
        HEADER + "host = os.environ['CURRENT_HOST']\n"
        "hosts = MPI.COMM_WORLD.gather(host)\n"
        "if rank == 0:\n"
        "    assert hosts == [f'algo-{i + 1}' for i in range(200)], hosts\n"
        "    print('hosts ok', len(hosts), flush=True)\n",
    )
    # auto picks processes mode above 64 instances (each app context's own CURRENT_HOST)
    args = ["run", str(prog), "-N", "200", "-n", "1", "--timeout", "600"]
    r = smmpi(args, fault_env, timeout=700)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "hosts ok 200" in r.stdout
    if os.environ.get("SMMPI_ISOLATION") != "processes":
        assert "smmpi: processes mode (isolated hosts run at most 64 instances)" in r.stderr
    assert not any(Path(fault_env["TMPDIR"]).iterdir())


SPAWN_AND_WAIT = HEADER + (
    "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)'],"
    " start_new_session=True)\n"
    "subprocess.Popen(['sleep', '300'])\n"
    "print('ready', rank, flush=True)\n"
    "time.sleep(300)\n"
)


def _start_and_wait_ready(prog: Path, env: dict[str, str], ranks: int) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [str(BIN / "smmpi"), "run", str(prog), "-N", "2", "-n", str(ranks // 2)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
    )
    until_ready(proc, ranks)
    return proc


def test_sigkill_of_smmpi_leaves_no_process(fault_env: dict[str, str], tmp_path: Path) -> None:
    proc = _start_and_wait_ready(_program(tmp_path, SPAWN_AND_WAIT), fault_env, 4)
    proc.kill()
    proc.wait(timeout=30)
    # fault_env asserts that mpirun, every rank and every rank's child are gone;
    # the throwaway host trees go too
    tmp = Path(fault_env["TMPDIR"])
    deadline = time.monotonic() + 15
    while any(tmp.iterdir()) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not any(tmp.iterdir()), list(tmp.iterdir())


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_sigterm_of_smmpi_leaves_no_process_and_no_host_tree(
    signum: int, fault_env: dict[str, str], tmp_path: Path
) -> None:
    proc = _start_and_wait_ready(_program(tmp_path, SPAWN_AND_WAIT), fault_env, 4)
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "interrupted" in _last_line(err)
    assert not any(Path(fault_env["TMPDIR"]).iterdir())


STDIN_READER = HEADER + (
    "if rank == 0:\n"
    "    line = sys.stdin.readline()\n"
    "    print('got', repr(line.strip()), flush=True)\n"
    "MPI.COMM_WORLD.Barrier()\n"
)


def test_run_forwards_stdin_to_rank_0(fault_env: dict[str, str], tmp_path: Path) -> None:
    prog = _program(tmp_path, STDIN_READER)
    r = subprocess.run(
        [str(BIN / "smmpi"), "run", str(prog), "-N", "1", "-n", "2", "--timeout", "60"],
        env=fault_env,
        input="hello-stdin\n",
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    assert "got 'hello-stdin'" in r.stdout, r.stdout


def test_submit_local_keeps_stdin_closed_and_says_so(
    fault_env: dict[str, str], tmp_path: Path
) -> None:
    prog = _program(tmp_path, HEADER + "if rank == 0:\n    input()\nMPI.COMM_WORLD.Barrier()\n")
    r = subprocess.run(
        [str(BIN / "smmpi"), "submit", str(prog), "--instances", "1", "--ppn", "2", "--local"],
        env=fault_env,
        input="must-not-arrive\n",
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert r.returncode == 1, r.stderr
    assert "must-not-arrive" not in r.stdout + r.stderr
    assert "rank 0 (algo-1) failed: EOFError" in r.stderr, r.stderr
    assert "stdin is closed" in r.stderr, r.stderr


ESCAPES = (
    "if rank == 0:\n"
    "    text = 'esc:\\x1b]0;pwned\\x07 \\x1b[31mred\\x1b[0m nul:\\x00end'\n"
    "    print(text, flush=True)\n"
    "    print(text, file=sys.stderr, flush=True)\n"
)


def test_control_characters_are_escaped_on_screen_and_kept_in_logs(
    fault_env: dict[str, str], tmp_path: Path
) -> None:
    prog = _program(tmp_path, HEADER + ESCAPES)
    logs = tmp_path / "logs"
    r = smmpi(["run", str(prog), "-N", "1", "-n", "2", "--log-dir", str(logs)], fault_env)
    assert r.returncode == 0, r.stderr
    for shown in (r.stdout, r.stderr):
        assert "pwned" in shown and "red" in shown and "end" in shown
        assert not any(c in shown for c in "\x1b\x07\x00"), repr(shown)
    raw = (logs / "rank-0.log").read_bytes()
    assert raw.count(b"\x1b]0;pwned\x07") == 2 and raw.count(b"nul:\x00end") == 2, raw


def test_logs_escape_control_characters_from_cloudwatch(
    moto_server: MotoServer, env: dict[str, str]
) -> None:
    """`smmpi logs` shows a rank's escape sequences as text, not to the terminal."""
    from tests.ops.jobs import JOB, create_job
    from tests.ops.test_cloudwatch import write_streams

    create_job(moto_server)
    write_streams(
        moto_server,
        {"algo-1": "[1,0]<stdout>:esc:\x1b]0;pwned\x07 \x1b[31mred\x1b[0m\n[1,1]<stdout>:fine\n"},
    )
    for args in (["logs", JOB], ["logs", JOB, "--rank", "0"], ["logs", JOB, "--host", "algo-1"]):
        r = smmpi(args, {**env, **moto_server.aws_env()})
        assert r.returncode == 0, r.stderr
        assert "pwned" in r.stdout and "red" in r.stdout, r.stdout
        assert not any(c in r.stdout + r.stderr for c in "\x1b\x07"), repr(r.stdout)


def test_sigterm_while_host_trees_are_laid_out_leaves_no_tree(
    fault_env: dict[str, str], tmp_path: Path
) -> None:
    """SIGTERM while a large code folder is copied to every host: exit 130, nothing left."""
    prog = _program(tmp_path, HEADER + "time.sleep(300)\n")
    (prog.parent / "weights.bin").write_bytes(b"\0" * (64 * 1024 * 1024))
    proc = subprocess.Popen(
        [str(BIN / "smmpi"), "run", str(prog), "--source-dir", str(prog.parent), "-N", "16"],
        env=fault_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    tmp = Path(fault_env["TMPDIR"])
    deadline = time.monotonic() + 60
    # the run dir exists: its trees are being laid out (Python's first tempfile call writes
    # and removes a probe file of another name in TMPDIR before smmpi's signal handling starts)
    while not any(tmp.glob("smmpi-run-*")) and time.monotonic() < deadline:
        time.sleep(0.01)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "interrupted" in _last_line(err), err
    assert not any(tmp.iterdir()), list(tmp.iterdir())
