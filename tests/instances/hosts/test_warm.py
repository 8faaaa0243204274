"""`smmpi run --keep-warm`: warm instances reused by the next run of the same shape, through
the real CLI, real namespaces and mpirun; each job's files and processes its own; nothing left."""

from __future__ import annotations

import os
import signal
import stat
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import base_env, smmpi
from tests.instances.hosts.footprint import Machine, namespaces_in_use, new_namespaces
from tests.instances.hosts.keepers import gone, holders, keeper, keepers

#: Each rank: its host, network and mount namespaces, whether the last job's files are here;
#: then it leaves files of its own in /tmp and /opt/ml for the next job to (not) find.
PROGRAM = """
import os, socket
from mpi4py import MPI
rank = MPI.COMM_WORLD.Get_rank()
left = [p for p in ("/tmp/left-by-a-job", "/opt/ml/output/left-by-a-job") if os.path.exists(p)]
net, mnt = os.readlink("/proc/self/ns/net"), os.readlink("/proc/self/ns/mnt")
print("SEEN", rank, socket.gethostname(), net, mnt, ",".join(left) or "-", flush=True)
MPI.COMM_WORLD.Barrier()  # every rank has looked before any writes (two share each host)
for path in ("/tmp/left-by-a-job", "/opt/ml/output/left-by-a-job"):
    with open(path, "w") as f:
        f.write("job")
"""


@pytest.fixture
def env(tmp_path: Path) -> Iterator[dict[str, str]]:
    env = base_env(tmp_path)
    env.update(SMMPI_LOCAL_JOBS=str(tmp_path / "jobs"), SMMPI_ISOLATION="hosts")
    env["SMMPI_WARM_DIR"] = str(tmp_path / "warm")
    yield env
    smmpi(["run", "--keep-warm", "0"], env)  # whatever a failed test left


@pytest.fixture
def program(tmp_path: Path) -> str:
    path = tmp_path / "src" / "seen.py"
    path.parent.mkdir()
    path.write_text(PROGRAM)
    return str(path)


@pytest.fixture
def nothing_left(machine: Machine) -> Iterator[None]:
    before = namespaces_in_use()
    yield
    assert new_namespaces(before) == set()


def _run(env: dict[str, str], program: str, keep: str) -> tuple[list[list[str]], str]:
    done = smmpi(["run", program, "-N", "2", "-n", "2", "--keep-warm", keep], env, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    seen = [
        line.split("SEEN ", 1)[1].split() for line in done.stdout.splitlines() if "SEEN" in line
    ]
    assert len(seen) == 4, done.stdout
    return sorted(seen), done.stderr


def test_a_repeated_run_reuses_the_instances_but_nothing_of_the_last_job(
    env: dict[str, str], program: str, tmp_path: Path, nothing_left: None
) -> None:
    warm = tmp_path / "warm"
    first, said = _run(env, program, "600")
    assert "smmpi: warm instances hosts-2x2-ml.c5.2xlarge: made and kept 600 s" in said, said
    assert len(keepers(warm)) == 3  # the keeper and one holder per instance
    assert stat.S_IMODE(os.lstat(warm).st_mode) == 0o700
    (sock,) = warm.iterdir()
    assert stat.S_ISSOCK(os.lstat(sock).st_mode) and stat.S_IMODE(os.lstat(sock).st_mode) == 0o600
    kept = sorted(keepers(warm))
    held = {os.readlink(f"/proc/{pid}/ns/net") for pid in holders(warm)}  # alive: unique
    assert {s[2] for s in first} == held  # the run was on the kept instances' networks
    second, said = _run(env, program, "600")
    assert "smmpi: warm instances hosts-2x2-ml.c5.2xlarge: reused; kept 600 s" in said, said
    assert sorted(keepers(warm)) == kept  # the same keeper and holders
    for one, two in zip(first, second, strict=True):
        rank, host, net, _, left = two
        assert (rank, host, net) == tuple(one[:3])  # the same host: its name, eth0, addresses
        assert left == "-", f"rank {rank} found the last job's files: {left}"
    done = smmpi(["run", "--keep-warm", "0"], env)
    assert done.returncode == 0 and done.stdout == "", done.stderr
    assert done.stderr == "smmpi: warm instances hosts-2x2-ml.c5.2xlarge: ended\n"
    gone(warm, "after --keep-warm 0")
    assert list(warm.iterdir()) == []


def test_the_keeper_ends_itself_after_its_idle_seconds(
    env: dict[str, str], program: str, tmp_path: Path, nothing_left: None
) -> None:
    warm = tmp_path / "warm"
    _run(env, program, "1")
    gone(warm, "1 s after the run")
    assert list(warm.iterdir()) == []


def test_what_a_killed_keeper_left_is_cleared_by_the_next_run(
    env: dict[str, str], program: str, tmp_path: Path, nothing_left: None
) -> None:
    warm = tmp_path / "warm"
    first, _ = _run(env, program, "600")
    killed = keeper(warm)
    os.kill(killed, signal.SIGKILL)
    gone(warm, "its holders after SIGKILL of the keeper")
    (left,) = warm.iterdir()  # its socket: nobody answers there any more
    second, said = _run(env, program, "600")
    assert "made and kept 600 s" in said, said
    assert len(second) == len(first)
    assert [p.name for p in warm.iterdir()] == [left.name]
    assert keepers(warm) and killed not in keepers(warm)  # a new keeper answers there
    smmpi(["run", "--keep-warm", "0"], env)
    gone(warm, "after --keep-warm 0")


def test_a_warm_folder_that_is_a_link_is_not_used(
    env: dict[str, str], program: str, tmp_path: Path, nothing_left: None
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    (tmp_path / "warm").symlink_to(elsewhere)
    _, said = _run(env, program, "600")
    assert "is not a folder of this user's only (0700, not a link); this run makes its own" in said
    assert list(elsewhere.iterdir()) == []
    assert keepers(tmp_path / "warm") == []


def test_keep_gives_a_keeper_a_new_idle_period(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, nothing_left: None
) -> None:
    """serve's UpdateTrainingJob lengthens a pool's period: its keeper is told (``keep N``)."""
    from smmpi.instances.warm import lease

    warm = tmp_path / "warm"
    monkeypatch.setenv("SMMPI_WARM_DIR", str(warm))
    held = lease.take("job-t", 2, 1)  # a keeper of 2 instances that ends 1 s after its run
    assert held is not None and held.cold
    for fd in held.fds():  # the run has ended
        os.close(fd)
    lease.keep(warm, "job-t", 600)
    time.sleep(6)  # well past its first period: it would have ended by now
    assert len(keepers(warm)) == 3
    lease.end(warm, "job-t")
    gone(warm, "after end")
    assert list(warm.iterdir()) == []


def test_a_keeper_with_an_owner_ends_with_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, nothing_left: None
) -> None:
    """serve's pools: a keeper whose environment names its owner ends when the owner does,
    however it ends, its idle period notwithstanding."""
    import subprocess

    from smmpi.instances.warm import lease

    warm = tmp_path / "warm"
    owner = subprocess.Popen(["sleep", "600"])
    try:
        monkeypatch.setenv("SMMPI_WARM_DIR", str(warm))
        monkeypatch.setenv(lease.OWNER, str(owner.pid))
        held = lease.take("job-o", 2, 3600)
        assert held is not None and held.cold
        for fd in held.fds():  # the run has ended: an idle hour would follow
            os.close(fd)
        assert len(keepers(warm)) == 3  # the keeper and its two holders
    finally:
        owner.kill()
        owner.wait()
    gone(warm, "after its owner was killed")
    assert list(warm.iterdir()) == []
    monkeypatch.setenv(lease.OWNER, str(owner.pid))  # an owner already gone: no keeper
    with pytest.raises(lease.WarmRefused, match="did not start"):
        lease.take("job-p", 2, 3600)
    gone(warm, "a keeper whose owner was gone before it started")
