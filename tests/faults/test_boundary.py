"""The emulated instance is a security boundary: what a hostile rank reaches, and the machine.

One isolated run of boundary_probe.py (2 instances x 2 ranks, this shell's AWS keys in
smmpi's environment) answers most tests here; the tests that end a run on purpose, or pass
the keys on, run their own.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import signal
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import BIN, PipeLines, base_env, smmpi
from tests.instances.hosts.footprint import SCRATCH, Machine, descendants, wait_gone

PROBE = Path(__file__).with_name("boundary_probe.py")
KINDS = ("pid", "uts", "ipc", "net", "mnt", "cgroup")
#: Docker's default capabilities: what a SageMaker training container holds.
CONTAINER = "00000000a80425fb"
PRIVATE = ("/tmp", "/var/tmp", "/root", "/dev/shm", "/etc")


@dataclass(frozen=True)
class Host:
    """This machine, as a rank must not be able to change it."""

    hostname: str
    routes: str
    links: str
    hosts: str
    machine: Machine
    marks: tuple[str, ...]

    @classmethod
    def now(cls) -> Host:
        def ip(*words: str) -> str:
            return subprocess.run(["ip", *words], capture_output=True, text=True).stdout

        marks = tuple(str(p) for folder in PRIVATE for p in Path(folder).glob("mark-algo-*"))
        machine = Machine.now()
        # tests beside this one mount scratch file systems (pytest's folders, the compat suite's)
        mounts = tuple(m for m in machine.mounts if not any(s in m for s in SCRATCH))
        return cls(
            socket.gethostname(),
            ip("route"),
            ip("-o", "link"),
            Path("/etc/hosts").read_text(),
            dataclasses.replace(machine, mounts=mounts),
            marks,
        )


def _keys() -> dict[str, str]:
    tag = uuid.uuid4().hex
    return {
        "AWS_ACCESS_KEY_ID": f"AKIABOUNDARY{tag[:8].upper()}",
        "AWS_SECRET_ACCESS_KEY": f"boundary-secret-{tag}",
        "AWS_SESSION_TOKEN": f"boundary-token-{tag}",
    }


def _env(tmp_path: Path, keys: dict[str, str], isolation: str) -> dict[str, str]:
    env = base_env(tmp_path)
    env.update(keys, SMMPI_LOCAL_JOBS=str(tmp_path / "local-jobs"), SMMPI_ISOLATION=isolation)
    return env


def _outside_namespaces(rank_pids: list[int], pod: set[str]) -> list[str]:
    """Processes a rank can reach (its PID namespace) that share a namespace with this machine.

    Adds to ``pod`` every namespace of those processes, to check they are gone afterwards.
    """
    own = {kind: os.readlink(f"/proc/self/ns/{kind}") for kind in KINDS}
    reachable = {os.readlink(f"/proc/{pid}/ns/pid") for pid in rank_pids}
    shared = []
    for pid in (p for p in os.listdir("/proc") if p.isdigit()):
        try:
            if os.readlink(f"/proc/{pid}/ns/pid") not in reachable:
                continue
            kinds = {k: os.readlink(f"/proc/{pid}/ns/{k}") for k in KINDS}
            command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")[:80]
        except OSError:
            continue
        pod.update(v for k, v in kinds.items() if v != own[k])
        same = [k for k in KINDS if kinds[k] == own[k]]
        if same:
            shared.append(f"{pid} {command.decode(errors='replace')}: {same}")
    return shared


def _rank_pids(name: str, run: int) -> list[int]:
    """The ranks running ``name`` that the run started as ``run`` started (not another test's)."""
    found = []
    for pid in descendants(run):
        try:
            words = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if words[1:4] == [b"-m", b"mpi4py", name.encode()]:
            found.append(int(pid))
    return found


@dataclass
class ProbeRun:
    keys: dict[str, str]
    code: int
    stderr: str
    rows: dict[int, dict[str, Any]]
    shared: list[str]
    before: Host
    after: Host


def _read_rows(
    proc: subprocess.Popen[str], go: Path, deadline: float, pod: set[str]
) -> tuple[list[str], list[str]]:
    """Rank 0 waits for ``go``: check the namespaces of the pod meanwhile, then let it go on."""
    pipe = PipeLines(proc)
    lines: list[str] = []
    shared: list[str] = []
    while True:
        assert time.monotonic() < deadline, "the probe did not finish"
        ended = proc.poll() is not None
        more = pipe.next_lines()
        lines += more
        if ended and not more and not pipe.rest:
            break
        if any('{"ready"' in line for line in more):
            pids = _rank_pids(PROBE.name, proc.pid)
            settle = time.monotonic() + 10  # a rank's child between fork and exec has its argv
            while len(pids) != 4 and time.monotonic() < settle:
                time.sleep(0.05)
                pids = _rank_pids(PROBE.name, proc.pid)
            assert len(pids) == 4, pids
            shared = _outside_namespaces(pids, pod)
            go.write_text("go")
    return lines, shared


@pytest.fixture(scope="module")
def probe(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProbeRun]:
    tmp_path = tmp_path_factory.mktemp("boundary")
    keys = _keys()
    env = _env(tmp_path, keys, "hosts")
    before, pod = Host.now(), set()
    argv = [str(BIN / "smmpi"), "submit", str(PROBE), "-N", "2", "-n", "2", "--local"]
    argv += ["--job-name", "boundary", "--timeout", "200"]
    go = tmp_path / "local-jobs" / "boundary" / "hosts" / "algo-1" / "opt" / "ml" / "go"
    proc = subprocess.Popen(
        argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        lines, shared = _read_rows(proc, go, time.monotonic() + 240, pod)
        _, stderr = proc.communicate(timeout=60)
    finally:
        proc.kill()
    rows = {}
    for line in lines:
        if "<stdout>:{" in line and '"ready"' not in line:
            row = json.loads(line.split("<stdout>:", 1)[1])
            rows[row["rank"]] = row
    assert pod and wait_gone(pod) == []
    yield ProbeRun(keys, proc.returncode, stderr, rows, shared, before, Host.now())


def test_the_probe_ran_on_isolated_hosts(probe: ProbeRun) -> None:
    assert probe.code == 0, probe.stderr
    assert "isolated hosts" in probe.stderr.splitlines()[0]
    assert sorted(probe.rows) == [0, 1, 2, 3]
    assert [probe.rows[r]["host"] for r in range(4)] == ["algo-1", "algo-1", "algo-2", "algo-2"]


def test_no_process_a_rank_sees_holds_this_shells_credentials(probe: ProbeRun) -> None:
    """PID 1 of the pod and everything in it start from nothing of smmpi's environment."""
    for row in probe.rows.values():
        leaked = [
            (pid, entry)
            for pid, entry in row["aws"]
            if entry.split("=", 1)[1] in probe.keys.values()
        ]
        assert leaked == [], row["rank"]
        assert 1 in row["pids"] and len(row["environ readable"]) >= 4  # itself, mpirun, ...
        assert row["aws"] == []  # no AWS_ variable at all: the user passed none


def test_a_rank_sees_the_processes_of_its_own_instance_only(probe: ProbeRun) -> None:
    """As a container sees only its own: each instance has a PID namespace of its own."""
    for row in probe.rows.values():
        first = row["rank"] - row["rank"] % 2
        assert row["ranks seen"] == [first, first + 1], row["rank"]


def test_ranks_hold_a_containers_capabilities_only(probe: ProbeRun) -> None:
    for row in probe.rows.values():
        caps = row["caps"]
        assert (caps["CapEff"], caps["CapPrm"], caps["CapBnd"]) == (CONTAINER,) * 3, row["rank"]
        assert (caps["CapInh"], caps["CapAmb"]) == ("0" * 16, "0" * 16)


def test_no_process_a_rank_reaches_is_in_this_machines_namespaces(probe: ProbeRun) -> None:
    assert probe.shared == []


def test_attempts_to_leave_the_instance_fail_and_change_nothing(probe: ProbeRun) -> None:
    for rank in (0, 2):  # each instance's first rank
        attempts = probe.rows[rank]["attempts"]
        assert 0 not in attempts.values(), attempts  # 0: it worked
        assert probe.rows[rank]["hostname"] == probe.rows[rank]["host"]
        assert probe.rows[rank]["eth0"] == "up"
    assert probe.after == probe.before


def test_each_instance_has_its_own_tmp_etc_root_and_shm(probe: ProbeRun) -> None:
    """As each container has its own filesystem; this machine's files stay as they were."""
    for row in probe.rows.values():
        own = f"mark-{row['host']}"
        assert row["hosts marks"] == [own], row["rank"]  # algo-2's line is not on algo-1
        assert row["marks"] == {folder: [own] for folder in PRIVATE}, row["rank"]
        assert row["etc readable"]  # the machine's /etc, read through the instance's copy
        assert (row["home"], row["tmpdir"]) == ("/root", None)
    assert probe.after.marks == () and probe.after.hosts == probe.before.hosts


def _secret_files(folder: Path, keys: dict[str, str]) -> list[str]:
    found = []
    for path in folder.rglob("*"):
        if path.is_file() and not path.is_symlink():
            data = path.read_bytes()
            found += [f"{path}: {name}" for name, v in keys.items() if v.encode() in data]
    return found


SHOW_KEYS = """
import hashlib, os, sys
from pathlib import Path
from mpi4py import MPI
secret = os.environ.get("AWS_SECRET_ACCESS_KEY", "")
run = Path(os.environ["SMMPI_STACK_DIR"]).parents[1]
files = [p for p in run.rglob("*") if p.is_file() and not p.is_symlink()]
on_disk = [str(p) for p in files if secret and secret.encode() in p.read_bytes()]
print("keys", MPI.COMM_WORLD.Get_rank(), hashlib.sha256(secret.encode()).hexdigest(), on_disk)
"""


@pytest.mark.parametrize("isolation", ["hosts", "processes"])
def test_credentials_passed_on_are_never_written_to_disk(tmp_path: Path, isolation: str) -> None:
    """--with-credentials: the ranks get the keys, and no file of the run ever holds them."""
    keys = _keys()
    env = _env(tmp_path, keys, isolation)
    script = tmp_path / "show_keys.py"
    script.write_text(SHOW_KEYS)
    argv = ["submit", str(script), "-N", "2", "-n", "2", "--local", "--with-credentials"]
    r = smmpi([*argv, "--job-name", "keys"], env, timeout=300)
    assert r.returncode == 0, r.stderr
    digest = hashlib.sha256(keys["AWS_SECRET_ACCESS_KEY"].encode()).hexdigest()
    seen = sorted(
        line.split("<stdout>:", 1)[1] for line in r.stdout.splitlines() if ">:keys " in line
    )
    assert seen == [f"keys {rank} {digest} []" for rank in range(4)]  # nothing on disk while it ran
    assert _secret_files(tmp_path, keys) == []  # nor after
    assert all(v not in r.stdout + r.stderr for v in keys.values())


KILL_ALL = """
import os, signal
from mpi4py import MPI
MPI.COMM_WORLD.Barrier()
if MPI.COMM_WORLD.Get_rank() == 2:
    os.kill(-1, signal.SIGKILL)
MPI.COMM_WORLD.Barrier()
"""


def test_kill_of_every_process_stays_inside_the_pod(tmp_path: Path) -> None:
    """kill(-1) from a rank ends the run (non-zero, promptly) and nothing outside the pod."""
    env = _env(tmp_path, {}, "hosts")
    script = tmp_path / "kill_all.py"
    script.write_text(KILL_ALL)
    bystander = subprocess.Popen(["sleep", "300"])
    before = Host.now()
    try:
        start = time.monotonic()
        r = smmpi(["run", str(script), "-N", "2", "-n", "2", "--timeout", "120"], env, timeout=200)
        took = time.monotonic() - start
        assert r.returncode == 1, r.stderr
        assert took < 100, took  # ended by the kill, not by the timeout
        assert r.stderr.strip().splitlines()[-1].startswith("smmpi: ")
        assert bystander.poll() is None
        assert Host.now() == before
    finally:
        bystander.send_signal(signal.SIGKILL)
        bystander.wait()
