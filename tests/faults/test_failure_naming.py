"""Failure naming: one classification in both modes, from the ranks' own records.

Each case runs the real ``smmpi`` CLI (real ``mpirun``, several ranks) in the mode
``SMMPI_ISOLATION`` picks (``make test`` runs the suite in both), and checks the one
line that names the failure, the exit code, and (``fault_env``) that nothing outlives
the run. Cases that change a host's network or signal every process run in isolated
hosts whatever the mode: in processes mode they would reach this machine itself.
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from smmpi.mpi_output import FailureScan, Pitfall
from tests.helpers import BIN, smmpi

HEADER = "import os, signal, subprocess, sys, time\nfrom mpi4py import MPI\n"
HEADER += "comm = MPI.COMM_WORLD\nrank = comm.Get_rank()\n"
MODE = os.environ.get("SMMPI_ISOLATION") or "hosts"  # auto is hosts where the tests run


def _program(tmp_path: Path, body: str) -> Path:
    folder = tmp_path / "prog"
    folder.mkdir(exist_ok=True)
    path = folder / "fault.py"
    path.write_text(HEADER + body, encoding="utf-8")
    return path


def _last_line(text: str) -> str:
    lines = text.strip().splitlines()
    return lines[-1] if lines else ""


def _run(
    prog: Path, env: dict[str, str], *args: str, timeout: float = 180
) -> subprocess.CompletedProcess[str]:
    return smmpi(["run", str(prog), *args], env, timeout=timeout)


# --- a rank that kills its launcher, or every process ------------------------------------


def test_a_rank_that_kills_its_launcher_is_named(fault_env: dict[str, str], tmp_path: Path) -> None:
    """Blamed before: rank 0, "killed by signal 15 (SIGTERM)", which mpirun sent it."""
    prog = _program(
        tmp_path,
        "if rank == 1:\n    time.sleep(0.3)\n    os.kill(os.getppid(), signal.SIGKILL)\n"
        "comm.Barrier()\n",
    )
    r = _run(prog, fault_env, "-N", "1", "-n", "2", "--timeout", "60")
    assert r.returncode == 1, r.stderr
    assert _last_line(r.stderr).startswith(
        "smmpi: rank 1 (algo-1) failed: the process that started it (smmpi's rank watcher) "
        "was killed by signal 9 (SIGKILL) while the rank ran"
    ), r.stderr
    assert "stray process(es) left by rank 1" not in r.stderr  # the rank itself is no stray


def test_a_rank_that_kills_every_process_is_named(
    fault_env: dict[str, str], tmp_path: Path
) -> None:
    """kill(-1) from a rank: "mpirun exited with code 137" before. Isolated hosts only: in
    processes mode it would reach every process of this machine."""
    prog = _program(
        tmp_path,
        "comm.Barrier()\nif rank == 1:\n    os.kill(-1, signal.SIGKILL)\ncomm.Barrier()\n",
    )
    r = _run(prog, fault_env, "-N", "2", "-n", "2", "--isolation", "hosts", "--timeout", "60")
    assert r.returncode == 1, r.stderr
    line = _last_line(r.stderr)
    assert line.startswith(
        "smmpi: rank 1 (algo-1) outlived every other process of the run: all of them, mpirun "
        "included, were killed by signal 9 (SIGKILL) while it ran"
    ), r.stderr
    assert line.endswith("as kill(-1) from a rank does"), line


# --- MPI_Abort, sys.exit, exit codes: the same words in both modes -----------------------


def test_mpi_abort_zero_is_a_failure(fault_env: dict[str, str], tmp_path: Path) -> None:
    """Reported "completed", exit 0 before, although Open MPI killed the other ranks."""
    prog = _program(tmp_path, "if rank == 1:\n    comm.Abort(0)\ncomm.Barrier()\n")
    r = _run(prog, fault_env, "-N", "1", "-n", "2", "--timeout", "60")
    assert r.returncode == 1, r.stderr
    assert _last_line(r.stderr) == "smmpi: rank 1 (algo-1) called MPI_Abort(0)", r.stderr


@pytest.mark.parametrize(
    ("fault", "cause"),
    [
        ("comm.Abort(5)", "exit code 5 (MPI_Abort)"),
        ("MPI.COMM_SELF.Abort(6)", "exit code 6 (MPI_Abort)"),
        ("sys.exit(3)", "exit code 3"),  # mpi4py turns it into MPI_Abort(3) at exit
        ("os._exit(4)", "exit code 4"),
        ("raise ValueError('bad value')", "ValueError: bad value"),
        ("os.kill(os.getpid(), signal.SIGSEGV)", "killed by signal 11 (SIGSEGV)"),
    ],
)
def test_labels_come_from_the_rank_not_from_mpirun(
    fault: str, cause: str, fault_env: dict[str, str], tmp_path: Path
) -> None:
    """Before: in processes mode Abort(5) was "exit code 5" and sys.exit(3) was "exit code 3
    (MPI_Abort)"; isolated hosts said the opposite, from whichever notice mpirun printed."""
    prog = _program(tmp_path, f"if rank == 2:\n    time.sleep(0.2)\n    {fault}\ncomm.Barrier()\n")
    r = _run(prog, fault_env, "-N", "2", "-n", "2", "--timeout", "60")
    assert r.returncode == 1, r.stderr
    assert _last_line(r.stderr) == f"smmpi: rank 2 (algo-2) failed: {cause}", r.stderr


# --- dynamic processes -----------------------------------------------------------------


def test_spawn_fails_fast_with_no_free_slots(fault_env: dict[str, str], tmp_path: Path) -> None:
    """Processes mode hung until --timeout (its mpirun oversubscribes; SageMaker's does not)."""
    prog = _program(
        tmp_path,
        "child = [os.path.join(os.path.dirname(os.path.abspath(__file__)), 'child.py')]\n"
        "if rank == 0:\n    MPI.COMM_SELF.Spawn(sys.executable, child, 1)\ncomm.Barrier()\n",
    )
    (prog.parent / "child.py").write_text(
        "from mpi4py import MPI\nMPI.Comm.Get_parent().Disconnect()\n", encoding="utf-8"
    )
    start = time.monotonic()
    r = _run(prog, fault_env, "-N", "1", "-n", "2", "--timeout", "120")
    elapsed = time.monotonic() - start
    assert r.returncode == 1, r.stderr
    line = _last_line(r.stderr)
    assert line.startswith("smmpi: rank 0 (algo-1) failed: mpi4py.MPI.Exception: MPI_ERR_SPAWN")
    assert "dynamic processes have no free slots, as on SageMaker" in line, line
    assert elapsed < 60, elapsed


# --- room for Open MPI's session files ---------------------------------------------------


@pytest.fixture
def small_tmpfs(
    fault_env: dict[str, str], tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[Path]:
    """A tmpfs of the size the test names, unmounted before ``fault_env`` compares mounts."""
    folder = tmp_path / "small"
    folder.mkdir()
    subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={request.param}", "tmpfs", str(folder)], check=True
    )
    try:
        yield folder
    finally:
        subprocess.run(["umount", str(folder)], check=True)


@pytest.mark.parametrize("small_tmpfs", ["256k", "2m", "16m"], indirect=True)
def test_a_small_tmpdir_is_named_in_one_line(
    small_tmpfs: Path, fault_env: dict[str, str], tmp_path: Path
) -> None:
    """Before: 7-15 lines of PMIx errors, then a wait until --timeout (or forever), and
    processes mode left ompi.vm.0 behind."""
    prog = _program(tmp_path, "comm.Barrier()\nprint('done-by', rank, flush=True)\n")
    env = {**fault_env, "TMPDIR": str(small_tmpfs)}
    r = _run(prog, env, "-N", "2", "-n", "2", "--timeout", "120")
    # each isolated instance runs an Open MPI daemon of its own, with about 8 MB of session
    # files: 2 of them do not fit in 16 MB, processes mode's one does
    st = os.statvfs(small_tmpfs)
    fits = MODE == "processes" and st.f_blocks * st.f_frsize >= 16 * 1024 * 1024
    lines = r.stderr.strip().splitlines()
    if fits:
        assert r.returncode == 0 and r.stdout.count("done-by") == 4, r.stderr
    else:
        assert r.returncode == 2 and len(lines) == 1, r.stderr
        assert lines[0].startswith(f"smmpi: invalid TMPDIR: '{small_tmpfs}'"), lines[0]
        assert "it is too small or full" in lines[0], lines[0]
    assert not any(small_tmpfs.iterdir()), list(small_tmpfs.iterdir())


@pytest.mark.parametrize("small_tmpfs", ["2m"], indirect=True)
def test_a_local_job_without_room_fails_before_any_rank_starts(
    small_tmpfs: Path, fault_env: dict[str, str]
) -> None:
    """submit --local lays its hosts out in the local job's folder: too little room there is
    one line, the job Failed, and no mpirun started."""
    env = {**fault_env, "SMMPI_LOCAL_JOBS": str(small_tmpfs / "jobs")}
    r = smmpi(["submit", "demo", "--instances", "2", "--ppn", "2", "--local"], env, timeout=300)
    assert r.returncode == 1, r.stderr
    line = _last_line(r.stderr)
    assert re.fullmatch(
        rf"smmpi: {small_tmpfs}/jobs/\S+/hosts is too small or full \(\d+\.\d MB free\): "
        r"no rank was started; a run of 2 emulated host\(s\) needs about \d+\.\d MB there",
        line,
    ), r.stderr
    assert "Failed" in r.stderr and "MPI_Init" not in r.stderr


@pytest.mark.parametrize("small_tmpfs", ["256k"], indirect=True)
def test_session_files_that_do_not_fit_stop_the_run(
    small_tmpfs: Path, fault_env: dict[str, str], tmp_path: Path
) -> None:
    """The room runs out once the run has started (here: a session folder of the user's own,
    `--mpi-options "-mca orte_tmpdir_base DIR"`, which processes mode's mpirun honours):
    ranks fail in MPI_Init and mpirun hangs; the run is stopped within seconds, and one line
    says why."""
    prog = _program(tmp_path, "comm.Barrier()\n")
    own = ["--mpi-options", f"-mca orte_tmpdir_base {small_tmpfs}"]
    start = time.monotonic()
    r = _run(
        prog, fault_env, "-N", "2", "-n", "2", "--isolation", "processes", "--timeout", "120", *own
    )
    assert r.returncode == 1, r.stderr
    assert _last_line(r.stderr).startswith(f"smmpi: {small_tmpfs} is too small or full ("), r.stderr
    assert "Open MPI could not create its session files" in _last_line(r.stderr)
    assert time.monotonic() - start < 60


# --- a host that lost its network --------------------------------------------------------


def _find_rank(mark: str, rank: int) -> int | None:
    """This machine's pid of ``rank`` of the run whose ranks carry ``SMMPI_TEST_MARK=mark``."""
    wanted = {f"SMMPI_TEST_MARK={mark}".encode(), f"OMPI_COMM_WORLD_RANK={rank}".encode()}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            names = set((entry / "environ").read_bytes().split(b"\0"))
            command = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if wanted <= names and b"mpi4py" in command:
            return int(entry.name)
    return None


def _rank_pid(mark: str, rank: int, deadline: float) -> int:
    while time.monotonic() < deadline:
        pid = _find_rank(mark, rank)
        if pid is not None:
            return pid
        time.sleep(0.05)
    raise AssertionError(f"rank {rank} of run {mark} never started")


def _with_eth0_down(
    prog: Path,
    env: dict[str, str],
    timeout: str,
    after: float,
    ready: str = "",
    then: Callable[[str], None] | None = None,
) -> Any:
    """Run ``prog`` on 2 x 2 isolated hosts; ``after`` s into rank 2's life (with ``ready``,
    after rank 2 made that file in its instance's own filesystem), take algo-2's eth0 down
    from outside (a rank holds a container's rights and cannot: the boundary tests); then
    call ``then`` with the run's mark."""
    mark = uuid.uuid4().hex
    env = {**env, "SMMPI_TEST_MARK": mark}
    argv = [str(BIN / "smmpi"), "run", str(prog), "-N", "2", "-n", "2", "--isolation", "hosts"]
    argv += ["--timeout", timeout, "--pass-env", "SMMPI_TEST_MARK"]
    proc = subprocess.Popen(
        argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        pid = _rank_pid(mark, 2, time.monotonic() + 120)
        deadline = time.monotonic() + 120
        while ready and not Path(f"/proc/{pid}/root{ready}").exists():
            assert time.monotonic() < deadline and proc.poll() is None, f"no {ready}"
            time.sleep(0.05)
        time.sleep(after)
        nsenter = ["nsenter", "-t", str(pid), "-n", "ip", "link", "set", "eth0", "down"]
        subprocess.run(nsenter, check=True, capture_output=True)
        if then is not None:
            then(mark)
        out, err = proc.communicate(timeout=180)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)


def test_a_host_that_lost_its_network_and_a_rank_that_ended_are_named_at_timeout(
    fault_env: dict[str, str], tmp_path: Path
) -> None:
    """eth0 down on algo-2 ended as a bare timeout with a wrong "no stack" note before.
    Isolated hosts only: in processes mode eth0 is this machine's."""
    prog = _program(
        tmp_path,
        "comm.Barrier()\n"
        "if rank == 2:\n"
        "    open('/tmp/past-barrier', 'w').close()\n"
        "    time.sleep(4)  # algo-2's eth0 goes down meanwhile\n"
        "    os._exit(7)\n"
        "comm.Barrier()\n",
    )
    # eth0 goes down once rank 2 is past the first barrier (a loaded machine's ranks may take
    # longer than a fixed wait to reach it, and would then all wait there instead)
    r = _with_eth0_down(prog, fault_env, "12", 0.5, ready="/tmp/past-barrier")
    assert r.returncode == 124, r.stderr
    expected = (
        r"smmpi: timed out after 12 s; rank 2 \(algo-2\) had failed \d+\.\d s in: exit code 7, "
        r"and the run did not end; algo-2 lost its network \(eth0 has no route\)"
    )
    assert re.fullmatch(expected, _last_line(r.stderr)), r.stderr
    sections = r.stderr.split("--- rank ")[1:]
    assert len(sections) == 4, r.stderr
    for rank, section in enumerate(sections):
        if rank == 2:
            assert re.search(r"\(no stack: the rank had ended \d+\.\d s in: exit code 7\)", section)
        else:
            assert 'File "fault.py", line 10 in <module>' in section, section


def test_ranks_in_allreduce_when_a_host_loses_its_network(
    fault_env: dict[str, str], tmp_path: Path
) -> None:
    """Every rank shows its stack (inside Allreduce), or a note its records bear out; once
    algo-2's eth0 is down, the last line names the lost network, whether a rank there is
    still alive at the timeout or both have ended (exit code 255: their records say it)."""
    prog = _program(
        tmp_path,
        "import numpy as np\nbuf = np.ones(1 << 16)\ncomm.Barrier()\n"
        "comm.Allreduce(MPI.IN_PLACE, buf)\n"
        "if rank == 2:\n"
        "    open('/tmp/allreducing', 'w').close()\n"
        "while True:\n"
        "    comm.Allreduce(MPI.IN_PLACE, buf)\n",
    )
    # eth0 goes down once every rank is past the Barrier and the first Allreduce
    r = _with_eth0_down(prog, fault_env, "15", 0.0, ready="/tmp/allreducing")
    assert r.returncode == 124, r.stderr
    sections = r.stderr.split("--- rank ")[1:]
    assert len(sections) == 4, r.stderr
    for section in sections:  # in Allreduce, or still in the Barrier on a loaded machine
        shown = 'File "fault.py", line ' in section
        ended = re.search(r"\(no stack: the rank had ended \d+\.\d s in: \S", section)
        assert shown or ended, section
    assert "algo-2 lost its network (eth0 has no route)" in _last_line(r.stderr), r.stderr


def test_a_host_that_lost_its_network_is_named_when_its_ranks_have_ended(
    fault_env: dict[str, str], tmp_path: Path
) -> None:
    """Both ranks on algo-2 end (exit code 255) once its eth0 has no route, and the others
    wait for them: no live rank is left there at the timeout, and the ranks' own records
    still name the lost network."""
    prog = _program(
        tmp_path,
        "def routed():\n"
        "    return any(l.split()[:1] == ['eth0'] for l in open('/proc/self/net/route'))\n"
        "if rank >= 2:\n"
        "    open(f'/tmp/polling-{rank}', 'w').close()\n"
        "    while not os.path.exists('/tmp/polling-3'):\n"
        "        time.sleep(0.05)\n"
        "    if rank == 2:\n"
        "        open('/tmp/both-polling', 'w').close()\n"
        "    while routed():\n"
        "        time.sleep(0.05)\n"
        "    os._exit(255)\n"
        "comm.Barrier()\n",
    )
    r = _with_eth0_down(prog, fault_env, "15", 0.0, ready="/tmp/both-polling")
    assert r.returncode == 124, r.stderr
    expected = (
        r"smmpi: timed out after 15 s; rank [23] \(algo-2\) had failed \d+\.\d s in: "
        r"exit code 255, and the run did not end; algo-2 lost its network \(eth0 has no route\)"
    )
    assert re.fullmatch(expected, _last_line(r.stderr)), r.stderr


def test_a_host_that_lost_its_network_is_named_when_the_run_ends_by_itself(
    fault_env: dict[str, str], tmp_path: Path
) -> None:
    """algo-2's ranks end (exit code 255) once its eth0 has no route; algo-1's then end
    (exit code 3) when told: the run ends before its timeout, and its last line names the
    first failure and the lost network, as at a timeout."""
    prog = _program(
        tmp_path,
        "def routed():\n"
        "    return any(l.split()[:1] == ['eth0'] for l in open('/proc/self/net/route'))\n"
        "open(f'/tmp/polling-{rank}', 'w').close()\n"
        "if rank >= 2:\n"
        "    while not os.path.exists('/tmp/polling-3'):\n"
        "        time.sleep(0.05)\n"
        "    if rank == 2:\n"
        "        open('/tmp/both-polling', 'w').close()\n"
        "    while routed():\n"
        "        time.sleep(0.05)\n"
        "    os._exit(255)\n"
        "while not os.path.exists('/tmp/go'):\n"
        "    time.sleep(0.05)\n"
        "os._exit(3)\n",
    )

    def release_algo_1(mark: str) -> None:  # once both ranks on algo-2 have ended
        deadline = time.monotonic() + 120
        while any(_find_rank(mark, rank) is not None for rank in (2, 3)):
            assert time.monotonic() < deadline, "algo-2's ranks did not end"
            time.sleep(0.05)
        # both found and polling before either is told: the first to end (exit code 3)
        # ends the other (orte_abort_on_non_zero_status), and a search then finds none
        pids = {rank: _rank_pid(mark, rank, deadline) for rank in (0, 1)}
        for rank, pid in pids.items():
            while not Path(f"/proc/{pid}/root/tmp/polling-{rank}").exists():
                assert time.monotonic() < deadline, f"rank {rank} did not start"
                time.sleep(0.05)
        for pid in pids.values():
            with contextlib.suppress(OSError):  # (ended already, with the other)
                Path(f"/proc/{pid}/root/tmp/go").touch()

    r = _with_eth0_down(prog, fault_env, "600", 0.0, "/tmp/both-polling", release_algo_1)
    assert r.returncode == 1, r.stderr
    expected = (
        r"smmpi: rank [23] \(algo-2\) failed: exit code 255; "
        r"algo-2 lost its network \(eth0 has no route\)"
    )
    assert re.fullmatch(expected, _last_line(r.stderr)), r.stderr


# --- the pitfall table the failure scan reads ------------------------------------------


def test_the_failure_scan_reads_a_table_of_pitfalls() -> None:
    scan = FailureScan()
    scan.feed(
        "[1,0]<stderr>:[vm:1] PMIX ERROR: OUT-OF-RESOURCE in file /x/pmix_client.c at line 277"
    )
    scan.feed("[1,1]<stderr>:mpi4py.MPI.Exception: MPI_ERR_SPAWN: could not spawn processes")
    assert [p.key for p in scan.found] == ["no-room", "no-free-slots"]
    assert scan.stops is not None and scan.stops.key == "no-room"
    assert FailureScan(pitfalls=()).found == []
    table = [
        {"key": "k", "pattern": r"CUDA error: (\w+)", "cause": "no GPU here", "fix": "use CPU"}
    ]
    custom = FailureScan(pitfalls=Pitfall.rows(table))
    custom.feed("[1,2]<stderr>:RuntimeError: CUDA error: invalid_device")
    assert [p.note for p in custom.found] == ["no GPU here; use CPU"]


def test_open_mpi_without_ssh_is_named_from_its_own_message() -> None:
    """Open MPI 4.1.8's words when its rsh launcher finds neither ssh nor rsh (exit code 243)."""
    scan = FailureScan()
    for line in (
        "--------------------------------------------------------------------------",
        'The value of the MCA parameter "plm_rsh_agent" was set to a path',
        "that could not be found:",
        "  plm_rsh_agent: ssh : rsh",
    ):
        scan.feed(line)
    assert [p.key for p in scan.found] == ["no-rsh-agent"]
    assert scan.note(scan.found[0]) == (
        "Open MPI found no ssh or rsh to start its daemons with; "
        "install openssh-client (apt-get install openssh-client)"
    )
