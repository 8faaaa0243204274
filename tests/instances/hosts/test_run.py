"""`smmpi run` and `submit --local` on isolated hosts, through the real CLI, and what is left."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import tarfile
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from smmpi.instances.hosts.argv import isolated_argv
from tests.helpers import BIN, ROOT, PipeLines, base_env, smmpi
from tests.instances.hosts.footprint import Machine, namespaces_in_use, new_namespaces
from tests.nobody import NOBODY, give_to_nobody

HERE = Path(__file__).resolve().parent
PROBE = HERE / "probe.py"
DEMO = HERE / "seed004" / "mpi_demo.py"


@pytest.fixture
def nothing_left(machine: Machine) -> Iterator[None]:
    """After the test: no namespace that was not there before, and the same links and mounts."""
    before = namespaces_in_use()
    yield
    assert new_namespaces(before) == set()


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """These tests are about isolated hosts: they run in that mode whatever the suite's
    ``SMMPI_ISOLATION`` says (the tests that force the fallback say so on the command line)."""
    env = base_env(tmp_path)
    env["SMMPI_LOCAL_JOBS"] = str(tmp_path / "local-jobs")
    env["SMMPI_ISOLATION"] = "hosts"
    return env


def test_probe_sees_sagemakers_cluster(
    env: dict[str, str], tmp_path: Path, nothing_left: None
) -> None:
    """Under -N 3 -n 2 every rank sees its own host, local ranks, TCP, and its own /opt/ml."""
    assert not os.path.lexists("/opt/ml")
    script = tmp_path / "src" / "probe.py"
    script.parent.mkdir()
    shutil.copy(PROBE, script)
    argv = ["submit", str(script), "-N", "3", "-n", "2", "--local", "--job-name", "probe-hosts"]
    r = smmpi(argv, env, timeout=300)
    assert r.returncode == 0, r.stderr
    first = r.stderr.splitlines()[0]
    assert first.endswith("= 6 ranks (ml.c5.2xlarge, isolated hosts)"), first
    # 6 ranks on this machine's cores: waiting ranks yield when they fill the cores
    shared = "1" if 6 >= len(os.sched_getaffinity(0)) else None
    rows = sorted(
        (json.loads(ln.split("<stdout>:", 1)[1]) for ln in r.stdout.splitlines() if ":{" in ln),
        key=lambda row: row["rank"],
    )
    assert [row["rank"] for row in rows] == list(range(6))
    for row in rows:
        host = f"algo-{row['rank'] // 2 + 1}"
        assert row["hostname"] == row["processor"] == host
        assert (row["local_rank"], row["local_size"], row["shared_size"]) == (row["rank"] % 2, 2, 2)
        assert row["algo-2"] == "198.18.0.2"
        assert row["eth0_bytes"] > 8 << 20  # the 8 MiB Allreduce went over eth0 (TCP btl)
        assert row["library"] == "Open MPI v4.1.8"
        assert row["yield_when_idle"] == shared, row  # algo-2 and algo-3 through the agent too
    folder = tmp_path / "local-jobs" / "probe-hosts"
    with tarfile.open(folder / "model.tar.gz") as tar:
        members = {m.name: tar.extractfile(m).read().decode() for m in tar if m.isfile()}  # type: ignore[union-attr]
    assert members == {f"written-by-rank-{r}.txt": f"algo-{r // 2 + 1}" for r in range(6)}
    for k in (1, 2, 3):  # each file is in the tree of the instance whose rank wrote it
        model = folder / "hosts" / f"algo-{k}" / "opt" / "ml" / "model"
        assert sorted(p.name for p in model.iterdir()) == [
            f"written-by-rank-{2 * k - 2}.txt",
            f"written-by-rank-{2 * k - 1}.txt",
        ]
    assert not os.path.lexists("/opt/ml")


def test_seed_004_demo_runs_with_the_containers_line(
    env: dict[str, str], tmp_path: Path, nothing_left: None
) -> None:
    script = tmp_path / "src" / "mpi_demo.py"
    script.parent.mkdir()
    shutil.copy(DEMO, script)
    common = ["submit", str(script), "-N", "3", "-n", "2", "--job-name", "seed-004"]
    plan = json.loads(smmpi([*common, "--dry-run", "--json"], env).stdout)
    r = smmpi([*common, "--local"], env, timeout=300)
    assert r.returncode == 0, r.stderr
    first = "[1,mpirank:0,algo-1]<stdout>:Number of MPI processes that will talk to each other: 6"
    assert first in r.stdout
    for rank in range(6):
        tag = f"[1,mpirank:{rank},algo-{rank // 2 + 1}]<stdout>:"
        assert f"{tag}I am rank {rank}, my avg is: " in r.stdout
    ran = json.loads((tmp_path / "local-jobs" / "seed-004" / "hosts" / "command.json").read_text())
    agent = str(tmp_path / "local-jobs" / "seed-004" / "hosts" / "agent")
    # the interpreter: this Python, under smmpi's rank watcher (it records how each rank ends);
    # mpirun itself runs under smmpi's reaper inside the pod
    watch = str(ROOT / "smmpi" / "supervision" / "watch.py")
    argv = ran["argv"]
    assert argv[3:5] == [watch, "run"]
    inner = argv[argv.index("--") + 1 :]
    start = next(i for i, w in enumerate(inner) if w == watch and inner[i + 1] == "rank")
    words = inner[start - 3 : inner.index("mpi4py") - 1]
    assert words[1:5] == ["-I", "-S", watch, "rank"]
    assert words[-2:] == ["--", words[0]]
    assert inner == isolated_argv(plan["mpirun"], words, agent)


def test_failed_rank_is_named_with_its_host(
    env: dict[str, str], tmp_path: Path, nothing_left: None
) -> None:
    script = tmp_path / "bug.py"
    script.write_text(
        "from mpi4py import MPI\nimport numpy as np\n"
        "if MPI.COMM_WORLD.Get_rank() == 3:\n    np.mean([1, 2], dtype=np.float)\n"
        "MPI.COMM_WORLD.Barrier()\n"
    )
    r = smmpi(["run", str(script), "-N", "3", "-n", "2"], env, timeout=300)
    assert r.returncode == 1
    # the rank, its emulated host and the exception, then the pitfall's cause and fix
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith(
        "smmpi: rank 3 (algo-2) failed: AttributeError: module 'numpy' has no attribute 'float'."
        " (np.float was removed in NumPy 1.24"
    )


def test_timeout_dumps_every_ranks_stack(env: dict[str, str], nothing_left: None) -> None:
    argv = ["run", "alltoall", "-N", "2", "-n", "2", "--timeout", "8", "--", "--unsafe"]
    r = smmpi(argv, env, timeout=300)
    assert r.returncode == 124, r.stderr
    for rank, host in ((0, "algo-1"), (1, "algo-1"), (2, "algo-2"), (3, "algo-2")):
        section = r.stderr.split(f"--- rank {rank} ({host}) ---\n", 1)[1]
        assert 'File "alltoall.py"' in section.split("---", 1)[0], r.stderr


def test_sigkill_of_smmpi_leaves_nothing(
    env: dict[str, str], tmp_path: Path, nothing_left: None
) -> None:
    script = tmp_path / "hang_for_kill.py"
    script.write_text(
        "import sys, time\nfrom mpi4py import MPI\n"
        "print('started', MPI.COMM_WORLD.Get_rank(), flush=True)\n"
        "time.sleep(600)\n"
    )
    proc = subprocess.Popen(
        [str(BIN / "smmpi"), "run", str(script), "-N", "3", "-n", "2"],
        env={**env, "PYTHONUNBUFFERED": "1"},
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    try:  # each rank says so (its /tmp is its instance's own: no file would reach this test)
        PipeLines(proc).until(6, "<stdout>:started", time.monotonic() + 120)
        assert len(_ranks_of(script)) == 6
    finally:
        proc.send_signal(signal.SIGKILL)  # the test's point, and no leftover if it fails
        proc.wait()
    deadline = time.monotonic() + 10
    while _ranks_of(script) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _ranks_of(script) == []


def _ranks_of(script: Path) -> list[int]:
    """Processes that run ``script`` as a rank does (its copy in /opt/ml/code)."""
    found = []
    for pid in (p for p in os.listdir("/proc") if p.isdigit()):
        try:
            words = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if words[1:4] == [b"-m", b"mpi4py", script.name.encode()]:
            found.append(int(pid))
    return found


@pytest.mark.machine  # its ranks write this machine's /opt/ml, which the tests beside it check
def test_processes_mode_says_what_differs_and_notices_opt_ml(
    env: dict[str, str], tmp_path: Path
) -> None:
    assert not os.path.lexists("/opt/ml")
    script = tmp_path / "writes_opt_ml.py"
    script.write_text(
        "import os\nfrom mpi4py import MPI\n"
        "os.makedirs('/opt/ml/model', exist_ok=True)\n"
        "open('/opt/ml/model/model-%d.txt' % MPI.COMM_WORLD.Get_rank(), 'w').write('x')\n"
    )
    r = smmpi(["run", str(script), "-N", "2", "-n", "1", "--isolation", "processes"], env)
    assert r.returncode == 0, r.stderr
    lines = r.stderr.splitlines()
    assert lines[0].endswith("= 2 ranks (processes mode)")
    assert lines[1] == (
        "smmpi: processes mode (asked for): all instances share this machine's hostname, network "
        "and literal /opt/ml; local ranks and shared memory span every instance; the container's "
        "mpirun line is translated"
    )
    assert (
        "smmpi: the ranks wrote 2 file(s) under this machine's /opt/ml (/opt/ml/model/model-0.txt, "
        "...), which this run created and has removed" in r.stderr
    )
    assert not os.path.lexists("/opt/ml")


def test_bad_isolation_is_refused(env: dict[str, str], tmp_path: Path) -> None:
    r = smmpi(["run", "demo", "--isolation", "vm"], env)
    assert r.returncode == 2
    r = smmpi(["submit", "demo", "-N", "2", "-n", "1", "--dry-run", "--isolation", "hosts"], env)
    assert r.returncode == 2
    assert r.stderr.strip() == "smmpi: invalid --isolation: 'hosts'; allowed: only with --local"
    env["SMMPI_ISOLATION"] = "vm"
    r = smmpi(["run", "demo"], env)
    assert r.returncode == 2
    assert r.stderr.strip() == (
        "smmpi: invalid SMMPI_ISOLATION: 'vm'; allowed: auto | hosts | processes"
    )
    env["SMMPI_ISOLATION"] = "hosts"
    for command in (["run", "demo"], ["submit", "demo", "--local"]):
        r = smmpi([*command, "-N", "65", "-n", "1", "--timeout", "60"], env)
        assert r.returncode == 2
        assert r.stderr.strip() == (
            "smmpi: invalid isolation: 'hosts'; allowed: auto or processes above 64 instances"
        )
    assert not (tmp_path / "local-jobs").exists()


@pytest.mark.machine  # 64 instances at once take the machine: not beside other runs
def test_sixty_four_isolated_hosts_run(
    env: dict[str, str], tmp_path: Path, nothing_left: None
) -> None:
    """The largest isolated world: 64 instances, each rank on its own host, over TCP."""
    script = tmp_path / "sum.py"
    script.write_text(
        "import socket\nfrom mpi4py import MPI\n"
        "c = MPI.COMM_WORLD\n"
        "hosts = c.gather(socket.gethostname())\n"
        "total = c.allreduce(c.Get_rank())\n"
        "if c.Get_rank() == 0:\n"
        "    assert hosts == [f'algo-{k}' for k in range(1, 65)], hosts\n"
        "    print('sum', total, flush=True)\n"
    )
    r = smmpi(["run", str(script), "-N", "64", "-n", "1", "--timeout", "300"], env, timeout=400)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stderr.splitlines()[0].endswith("= 64 ranks (isolated hosts)")
    assert "sum 2016" in r.stdout


def test_an_unprivileged_user_runs_isolated_hosts(
    tmp_path: Path, nothing_left: None, nobody_python: str
) -> None:
    """As user 65534: a user namespace maps it to root; the probe sees the same cluster."""
    shared = os.environ.get("SMMPI_TESTS_SHARED_TMP") or None  # not a worker's own TMPDIR
    home = Path(tempfile.mkdtemp(prefix="smmpi-nobody-", dir=shared))
    runs_before = _nobodys_run_folders()
    try:
        shutil.copy(PROBE, home / "probe.py")
        give_to_nobody(home)
        bin_dir = Path(nobody_python).parent
        env = {"HOME": str(home), "PATH": f"{bin_dir}:/usr/bin:/bin", "LC_ALL": "C.UTF-8"}
        argv = [*NOBODY, str(bin_dir / "smmpi"), "run", str(home / "probe.py")]
        done = subprocess.run(
            [*argv, "-N", "2", "-n", "2"],
            env=env,
            cwd=home,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr
        assert done.stderr.splitlines()[0].endswith("= 4 ranks (isolated hosts)")
        rows = [json.loads(ln.split("<stdout>:", 1)[1]) for ln in done.stdout.splitlines()]
        assert sorted((r["rank"], r["hostname"], r["local_rank"]) for r in rows) == [
            (0, "algo-1", 0),
            (1, "algo-1", 1),
            (2, "algo-2", 0),
            (3, "algo-2", 1),
        ]
        assert all(r["eth0_bytes"] > 8 << 20 for r in rows if r["hostname"] == "algo-2")
        deadline = time.monotonic() + 10  # its run folder, in /tmp (the tests' own TMPDIR aside)
        while (left := _nobodys_run_folders() - runs_before) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not left, left
    finally:
        shutil.rmtree(home, ignore_errors=True)


def _nobodys_run_folders() -> set[Path]:
    """User 65534's run folders in /tmp: no test but the one above runs smmpi as that user."""
    found = set()
    for folder in Path("/tmp").glob("smmpi-run-*"):
        try:
            if folder.lstat().st_uid == 65534:
                found.add(folder)
        except OSError:
            pass
    return found


@pytest.mark.aws  # under the network guard: nothing may leave for AWS
def test_this_shells_credentials_stay_out_of_the_instances(
    env: dict[str, str], tmp_path: Path, nothing_left: None
) -> None:
    secret = "testing-secret-do-not-print"
    script = tmp_path / "creds.py"
    script.write_text(
        "import os\nfrom mpi4py import MPI\n"
        "print('seen', MPI.COMM_WORLD.Get_rank(), os.environ.get('AWS_SECRET_ACCESS_KEY'))\n"
    )
    env |= {"AWS_SECRET_ACCESS_KEY": secret, "AWS_ACCESS_KEY_ID": "testing-AKIDEXAMPLE"}
    argv = ["submit", str(script), "-N", "2", "-n", "1", "--local", "--job-name", "creds"]
    r = smmpi([*argv, "--region", "us-west-2", "--role", "arn:aws:iam::123456789012:role/x"], env)
    assert r.returncode == 0, r.stderr
    assert sorted(ln for ln in r.stdout.splitlines() if "seen" in ln) == [
        "[1,mpirank:0,algo-1]<stdout>:seen 0 None",
        "[1,mpirank:1,algo-2]<stdout>:seen 1 None",
    ]
    for path in (tmp_path / "local-jobs" / "creds").rglob("*"):
        if path.is_file():
            assert secret.encode() not in path.read_bytes(), path


def test_a_process_left_on_another_instance_is_killed_and_named(
    env: dict[str, str], tmp_path: Path, nothing_left: None
) -> None:
    """algo-2's launch service owns what its ranks leave: the run ends, and says what it killed."""
    script = tmp_path / "leave.py"
    script.write_text(
        "import subprocess\nfrom mpi4py import MPI\n"
        "if MPI.COMM_WORLD.Get_rank() == 3:\n    subprocess.Popen(['sleep', '300'])\n"
        "MPI.COMM_WORLD.Barrier()\n"
    )
    r = smmpi(["run", str(script), "-N", "2", "-n", "2", "--timeout", "60"], env, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "stray process(es) left by rank 3 (algo-2): sleep 300" in r.stderr, r.stderr
