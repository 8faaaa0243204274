"""A run's processes share one CPU cgroup, so each emulated instance's sessions (its orted's)
do not each get an equal share of this machine's cores (Linux's autogroups)."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from smmpi.supervision import cpu_share
from tests.helpers import BIN, base_env
from tests.instances.hosts.footprint import descendants

CPU = Path("/sys/fs/cgroup/cpu")  # this machine's CPU hierarchy (cgroup v1, as CI's)
SEEN = (  # the rank's own view of its CPU cgroup
    "import time\n"
    "from mpi4py import MPI\n"
    "lines = open('/proc/self/cgroup').read().splitlines()\n"
    "cpu = next(l.split(':', 2)[2] for l in lines if 'cpu' in l.split(':')[1].split(','))\n"
    "print('ready', MPI.COMM_WORLD.rank, cpu, flush=True)\n"
)
WAIT = SEEN + "time.sleep(300)\n"


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    env = base_env(tmp_path)
    env["SMMPI_ISOLATION"] = "hosts"
    return env


def _groups_of(smmpi_pid: int) -> list[Path]:
    return sorted(CPU.glob(f"{cpu_share.PREFIX}{smmpi_pid}-*"))


def _members(group: Path) -> set[str]:
    try:
        return set((group / "cgroup.procs").read_text().split())
    except FileNotFoundError:  # removed meanwhile
        return set()


def _cpu_group_of(pid: str) -> str:
    lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
    return next(line.split(":", 2)[2] for line in lines if "cpu" in line.split(":")[1].split(","))


def _argv(pid: str) -> list[str]:
    return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")


def _autogroup(pid: str) -> str:
    return Path(f"/proc/{pid}/autogroup").read_text().split()[0]


def _started(
    env: dict[str, str], tmp_path: Path, instances: int, ppn: int, group: Path | None = None
) -> tuple[subprocess.Popen[str], list[str]]:
    """``smmpi run`` of ``instances`` x ``ppn`` ranks that wait, in the CPU cgroup ``group``
    if given, and the ready line of each rank."""
    prog = tmp_path / "wait.py"
    prog.write_text(WAIT)
    argv = [str(BIN / "smmpi"), "run", str(prog), "-N", str(instances), "-n", str(ppn)]
    argv += ["--timeout", "300"]
    procs = None if group is None else group / "cgroup.procs"
    proc = subprocess.Popen(
        argv,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=None if procs is None else lambda: procs.write_text(str(os.getpid())),
    )
    assert proc.stdout is not None
    ranks = instances * ppn
    ready = [line for _, line in zip(range(ranks), proc.stdout, strict=False)]
    assert len(ready) == ranks and all("ready" in line for line in ready), proc.communicate()
    return proc, ready


@pytest.fixture
def waiting(env: dict[str, str], tmp_path: Path) -> Iterator[subprocess.Popen[str]]:
    """``smmpi run`` of 2 x 2 ranks that wait, once every rank has said it is ready; each
    sees its CPU cgroup as ``/`` (its cgroup namespace's root, as in a container)."""
    assert Path(cpu_share.AUTOGROUP).read_text().strip() == "1", "a machine with autogroups"
    assert _cpu_group_of("self") == "/", "tests that start at the CPU hierarchy's root"
    proc, ready = _started(env, tmp_path, 2, 2)
    assert all(line.split()[-1] == "/" for line in ready), ready
    yield proc
    if proc.poll() is None:
        proc.kill()
    proc.communicate(timeout=60)


def _gone(smmpi_pid: int, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while _groups_of(smmpi_pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    return not _groups_of(smmpi_pid)


def test_every_process_of_the_run_shares_one_cpu_group(waiting: subprocess.Popen[str]) -> None:
    (group,) = _groups_of(waiting.pid)
    (reaper,) = Path(f"/proc/{waiting.pid}/task/{waiting.pid}/children").read_text().split()
    run = descendants(int(reaper))
    members = _members(group)
    assert set(run) <= members, "a process of the run outside its CPU group"
    assert str(waiting.pid) not in members  # smmpi itself stays where it was started
    ranks = [p for p in run if _argv(p)[1:4] == ["-m", "mpi4py", "wait.py"]]
    assert len(ranks) == 4
    # what the group is for: algo-2's ranks are in another session (its orted's), so another
    # autogroup, which the kernel ignores for processes in a CPU group of their own
    assert len({_autogroup(p) for p in ranks}) == 2
    waiting.send_signal(signal.SIGINT)
    waiting.communicate(timeout=60)
    assert _gone(waiting.pid), "the run's CPU group outlived it"


def test_sigkill_of_smmpi_leaves_no_cpu_group(waiting: subprocess.Popen[str]) -> None:
    assert _groups_of(waiting.pid)
    waiting.kill()
    assert _gone(waiting.pid), "the run's CPU group outlived smmpi's SIGKILL"


def test_a_group_left_by_a_killed_reaper_goes_at_the_next_run(
    waiting: subprocess.Popen[str], env: dict[str, str], tmp_path: Path
) -> None:
    (group,) = _groups_of(waiting.pid)
    (reaper,) = Path(f"/proc/{waiting.pid}/task/{waiting.pid}/children").read_text().split()
    os.kill(int(reaper), signal.SIGKILL)  # everything below it dies with it, but nothing cleans
    waiting.communicate(timeout=60)
    deadline = time.monotonic() + 10
    while group.exists() and _members(group) and time.monotonic() < deadline:
        time.sleep(0.1)
    # left empty (unless a run of a test beside this one has removed it already)
    assert not group.exists() or not _members(group)
    prog = tmp_path / "hello.py"
    prog.write_text("from mpi4py import MPI\n")
    done = subprocess.run(
        [str(BIN / "smmpi"), "run", str(prog), "-N", "1", "-n", "1"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert not group.exists()


def test_a_run_already_in_a_cpu_group_makes_none(env: dict[str, str], tmp_path: Path) -> None:
    """A run started in a CPU cgroup (a systemd slice, a container) is out of autogroups'
    reach already: smmpi makes no group, and its ranks stay in the one they were given."""
    group = CPU / f"smmpi-tests-{os.getpid()}-{tmp_path.name}"
    group.mkdir()
    try:
        proc, _ = _started(env, tmp_path, 2, 1, group)
        try:
            ranks = [p for p in _members(group) if _argv(p)[1:4] == ["-m", "mpi4py", "wait.py"]]
            assert len(ranks) == 2 and not _groups_of(proc.pid)
            assert not [p for p in group.iterdir() if p.is_dir()]  # nor one below it
        finally:
            proc.send_signal(signal.SIGINT)
            proc.communicate(timeout=60)
    finally:
        deadline = time.monotonic() + 10
        while _members(group) and time.monotonic() < deadline:
            time.sleep(0.1)
        group.rmdir()


def test_in_processes_mode_a_rank_sees_the_runs_group(env: dict[str, str], tmp_path: Path) -> None:
    """Processes mode has no cgroup namespace: a rank's /proc/self/cgroup names the group."""
    env["SMMPI_ISOLATION"] = "processes"
    prog = tmp_path / "seen.py"
    prog.write_text(SEEN)
    argv = [str(BIN / "smmpi"), "run", str(prog), "-N", "2", "-n", "1"]
    proc = subprocess.Popen(
        argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    seen = [line.split()[-1] for line in out.splitlines() if "ready" in line]
    assert len(seen) == 2, out
    assert all(path.startswith(f"/{cpu_share.PREFIX}{proc.pid}-") for path in seen), seen
    assert not _groups_of(proc.pid)
