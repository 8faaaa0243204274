"""Isolated instances on real namespaces: what a process inside sees, and that nothing is left."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from smmpi.instances.hosts import launch, pids, plan
from tests.instances.hosts.conftest import ENV, make_pod
from tests.instances.hosts.footprint import Machine, pod_namespaces, wait_gone
from tests.nobody import NOBODY, give_to_nobody

# Run on algo-1; visits algo-2 and algo-3 through the launch agent, as Open MPI would.
CHECK = r"""
set -e
agent="$1"
echo "host=$(hostname)"
echo "uname=$(uname -n)"
echo "algo-2=$(getent hosts algo-2 | cut -d' ' -f1)"
echo "eth0=$(ip -4 -o addr show dev eth0 | tr -s ' ' | cut -d' ' -f4)"
echo "routes=$(ip route | tr '\n' ';')"
echo "opt=$(ls -A /opt | tr '\n' ' ')"
echo "pwd=$(pwd)"
echo "sysnet=$(ls /sys/class/net | tr '\n' ' ')"
echo "cgroup=$(test -d /sys/fs/cgroup/memory && echo yes)"
for h in algo-2 algo-3; do
  addr='ip -4 -o addr show dev eth0 | tr -s " " | cut -d" " -f4'
  echo "remote-$h=$("$agent" "$h" "hostname; $addr" | tr '\n' ' ')"
  "$agent" "$h" "echo from-\$(hostname) > /opt/ml/model/where.txt"
done
echo here > /opt/ml/model/where.txt
python3 "$(dirname "$0")/tcp.py" "$agent"
"""

# algo-3 listens (started through the agent), algo-1 connects by name over eth0.
TCP = """
import socket, subprocess, sys, time
serve = (
    "import socket; s = socket.create_server(('0.0.0.0', 7070)); c, a = s.accept(); "
    "c.sendall(socket.gethostname().encode() + b' ' + a[0].encode())"
)
server = subprocess.Popen([sys.argv[1], "algo-3", f'python3 -c "{serve}"'])
for _ in range(200):
    try:
        conn = socket.create_connection(("algo-3", 7070))
        break
    except OSError:
        time.sleep(0.05)
print("tcp=" + conn.recv(100).decode())
server.wait()
"""


def _run(pod: launch.Pod, argv: list[str]) -> subprocess.CompletedProcess[str]:
    proc = launch.start(
        pod, argv, ENV, "/opt/ml/code", stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    out, err = proc.communicate(timeout=120)
    return subprocess.CompletedProcess(argv, proc.returncode, out.decode(), err.decode())


def test_each_instance_is_a_host_of_its_own(run_dir: Path, machine: Machine) -> None:
    pod = make_pod(run_dir, 3)
    script = run_dir / "check.sh"
    script.write_text(CHECK)
    (run_dir / "tcp.py").write_text(TCP)
    done = _run(pod, ["sh", str(script), str(launch.agent_path(pod))])
    assert done.returncode == 0, done.stderr
    seen = dict(line.split("=", 1) for line in done.stdout.splitlines() if "=" in line)
    assert seen["host"] == seen["uname"] == "algo-1"
    assert seen["algo-2"] == "198.18.0.2"
    assert seen["eth0"] == "198.18.0.1/15"
    assert "default" not in seen["routes"] and "198.18.0.0/15 dev eth0" in seen["routes"]
    assert sorted(seen["opt"].split()) == sorted([*machine.opt - {"ml"}, "ml"])
    assert seen["pwd"] == "/opt/ml/code"
    assert seen["sysnet"].split() == ["eth0", "lo"]
    assert seen["cgroup"] == ("yes" if os.path.isdir("/sys/fs/cgroup/memory") else "")
    assert seen["remote-algo-2"].split() == ["algo-2", "198.18.0.2/15"]
    assert seen["remote-algo-3"].split() == ["algo-3", "198.18.0.3/15"]
    assert seen["tcp"] == "algo-3 198.18.0.1"
    # a literal /opt/ml path lands in that instance's own tree, and nowhere else
    for k, tree in enumerate(pod.opt_ml, start=1):
        expected = "here" if k == 1 else f"from-algo-{k}"
        assert (tree / "model" / "where.txt").read_text().strip() == expected


def test_an_unprivileged_user_gets_the_same_hosts(
    run_dir: Path, machine: Machine, nobody_python: str
) -> None:
    """As user 65534: a user namespace maps it to root, and everything else is as for root."""
    pod = make_pod(run_dir, 3)
    (run_dir / "check.sh").write_text(CHECK)
    (run_dir / "tcp.py").write_text(TCP)
    give_to_nobody(run_dir)
    starter = (
        "import sys\n"
        "from pathlib import Path\n"
        "from smmpi.instances.hosts import launch\n"
        f"ENV = {ENV!r}\n"
        "run = Path(sys.argv[1])\n"
        "pod = launch.Pod(tuple(f'algo-{k}' for k in (1, 2, 3)),"
        " tuple(run / f'algo-{k}' / 'opt' / 'ml' for k in (1, 2, 3)), run)\n"
        "argv = ['sh', str(run / 'check.sh'), str(launch.agent_path(pod))]\n"
        "sys.exit(launch.start(pod, argv, ENV).wait())\n"
    )
    done = subprocess.run(
        [*NOBODY, nobody_python, "-c", starter, str(run_dir)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=run_dir,
        env={"PATH": ENV["PATH"]},
    )
    assert done.returncode == 0, done.stderr
    seen = dict(line.split("=", 1) for line in done.stdout.splitlines() if "=" in line)
    assert seen["host"] == "algo-1"
    assert seen["remote-algo-3"].split() == ["algo-3", "198.18.0.3/15"]
    assert seen["tcp"] == "algo-3 198.18.0.1"
    for k, tree in enumerate(pod.opt_ml, start=1):
        assert (tree / "model" / "where.txt").stat().st_uid == 65534, k


def test_exit_status_and_unknown_host(run_dir: Path, machine: Machine) -> None:
    pod = make_pod(run_dir, 2)
    agent = str(launch.agent_path(pod))
    done = _run(pod, ["sh", "-c", f'{agent} algo-9 true; echo "agent=$?"; exit 7'])
    assert done.returncode == 7
    assert "agent=255" in done.stdout
    assert "smmpi agent: no emulated instance named algo-9" in done.stderr


def test_set_up_failure_is_one_line(run_dir: Path, machine: Machine) -> None:
    pod = make_pod(run_dir, 2)
    broken = launch.Pod(pod.hosts, (pod.opt_ml[0], run_dir / "missing"), run_dir)
    done = _run(broken, ["true"])
    assert done.returncode == launch.SETUP_FAILED
    assert done.stderr.strip().splitlines() == [
        "smmpi: isolated hosts: set-up failed: algo-2: [Errno 2] "
        f"mount(tmpfs on {run_dir}/missing): No such file or directory"
    ]


def test_what_an_instance_makes_at_the_top_of_its_root_stays_in_it(
    run_dir: Path, machine: Machine
) -> None:
    """A container's working directory is / (the SDK's ``@remote`` job unpacks its workspace
    there, on every instance at once): each instance makes it in a root of its own, which goes
    with the instance; the machine's / never gets it."""
    pod = make_pod(run_dir, 2)
    agent, top = str(launch.agent_path(pod)), f"/smmpi-test-top-{run_dir.name}"
    make = run_dir / "make.sh"
    make.write_text(f"mkdir {top} && hostname > {top}/who\n")
    on_algo_2 = f"{agent} algo-2 sh {make} && {agent} algo-2 cat {top}/who"
    try:
        done = _run(pod, ["sh", "-c", f"sh {make} && {on_algo_2} && cat {top}/who && ls -A /"])
        assert not os.path.lexists(top)
    finally:
        shutil.rmtree(top, ignore_errors=True)  # (this test's own folder, where it leaked)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[:2] == ["algo-2", "algo-1"]
    assert set(os.listdir("/")) | {top[1:]} == set(lines[2:])  # the machine's entries, and its own


def test_command_not_found(run_dir: Path, machine: Machine) -> None:
    done = _run(make_pod(run_dir, 1), ["/nonexistent/mpirun"])
    assert done.returncode == 127
    assert "cannot start /nonexistent/mpirun on algo-1" in done.stderr


def _started(pod: launch.Pod, argv: list[str]) -> tuple[subprocess.Popen[bytes], set[str]]:
    """A pod whose command has started (it touches ``ready``), and its namespaces.

    The command then waits for a file ``go``, which this writes once it has counted.
    """
    ready, go = pod.run_dir / "ready", pod.run_dir / "go"
    wait = f"while [ ! -e {go} ]; do sleep 0.02; done"
    proc = launch.start(pod, ["sh", "-c", f"touch {ready}; {wait}; {' '.join(argv)}"], ENV, "/")
    deadline = time.monotonic() + 30
    while not ready.exists():
        assert proc.poll() is None and time.monotonic() < deadline
        time.sleep(0.02)
    namespaces = pod_namespaces(proc.pid)
    assert len(namespaces) >= 1 + 3 * len(pod.hosts)  # pid + (uts, net, mnt) per instance
    go.touch()
    return proc, namespaces


def test_nothing_left_after_success(run_dir: Path, machine: Machine) -> None:
    proc, namespaces = _started(make_pod(run_dir, 3), ["true"])
    assert proc.wait(timeout=30) == 0
    assert wait_gone(namespaces) == []


def test_nothing_left_after_sigterm(run_dir: Path, machine: Machine) -> None:
    proc, namespaces = _started(make_pod(run_dir, 3), ["sleep", "600"])
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == 128 + signal.SIGTERM
    assert wait_gone(namespaces) == []


def test_nothing_left_after_sigkill_of_the_pod(run_dir: Path, machine: Machine) -> None:
    proc, namespaces = _started(make_pod(run_dir, 3), ["sleep", "600"])
    proc.kill()
    proc.wait(timeout=30)
    assert wait_gone(namespaces) == []


def test_nothing_left_after_sigkill_of_its_starter(run_dir: Path, machine: Machine) -> None:
    """The process that started the pod (smmpi) is SIGKILLed: the kernel takes the pod down."""
    starter = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time\n"
            "from pathlib import Path\n"
            "from tests.instances.hosts.conftest import ENV, make_pod\n"
            "from smmpi.instances.hosts import launch\n"
            "pod = make_pod(Path(sys.argv[1]), 3)\n"
            "p = launch.start(pod, ['sh', '-c', 'touch ready; sleep 600'], ENV, sys.argv[1])\n"
            "print(p.pid, flush=True)\n"
            "p.wait()\n",
            str(run_dir),
        ],
        stdout=subprocess.PIPE,
        cwd=Path(__file__).resolve().parents[3],
    )
    assert starter.stdout is not None
    outer = int(starter.stdout.readline())
    deadline = time.monotonic() + 30
    while not (run_dir / "ready").exists():
        assert time.monotonic() < deadline
        time.sleep(0.02)
    namespaces = pod_namespaces(outer)
    assert len(namespaces) >= 10
    born = _start_time(outer)
    starter.kill()
    starter.wait()
    assert wait_gone(namespaces) == []
    deadline = time.monotonic() + 10  # its new parent reaps it; a test beside may reuse its pid
    while _alive_since(outer, born) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive_since(outer, born)


def _start_time(pid: int) -> str:
    """When ``pid`` started (clock ticks after boot): tells it from a later process of that pid."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]


def _alive_since(pid: int, born: str) -> bool:
    """Whether the process ``pid`` that started at ``born`` still runs (a zombie does not)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return False
    return fields[19] == born and fields[0] != "Z"


def test_bridge_batch_and_agent_are_what_runs(run_dir: Path) -> None:
    assert plan.bridge_batch([7, 9]).splitlines() == [
        "link add smmpi0 type bridge",
        "link set smmpi0 up",
        "link add v1 type veth peer name eth0 netns 7",
        "link set v1 master smmpi0 up",
        "link add v2 type veth peer name eth0 netns 9",
        "link set v2 master smmpi0 up",
    ]
    assert plan.hosts_file(["algo-1", "algo-2"]).splitlines()[-2:] == [
        "198.18.0.1\talgo-1",
        "198.18.0.2\talgo-2",
    ]


def test_agent_gives_each_host_its_own_environment(run_dir: Path, machine: Machine) -> None:
    """As on SageMaker's workers: a command started there sees that host's environment only."""
    base = make_pod(run_dir, 2)
    tricky = 'it\'s "quoted" $HOME `x` \\ end'
    host_env = tuple({**ENV, "CURRENT_HOST": h, "TRICKY": tricky} for h in base.hosts)
    pod = launch.Pod(base.hosts, base.opt_ml, run_dir, host_env)
    agent = launch.agent_path(pod)
    show = 'echo "$CURRENT_HOST|${ONLY_ON_MPIRUN-unset}|$TRICKY"'
    argv = ["sh", "-c", f"{agent} algo-2 '{show}'; {agent} algo-1 '{show}'"]
    env = {**ENV, "ONLY_ON_MPIRUN": "1", "CURRENT_HOST": "algo-1"}
    proc = launch.start(pod, argv, env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err.decode()
    assert out.decode().splitlines() == [f"algo-2|unset|{tricky}", f"algo-1|unset|{tricky}"]


def test_ids_inside_map_to_processes_here(run_dir: Path, machine: Machine) -> None:
    """What a rank records (its id inside the pod) is translated to the id smmpi can signal."""
    pod = make_pod(run_dir, 2)
    agent = launch.agent_path(pod)
    record = (
        f"{agent} algo-2 'sh -c \"echo \\$\\$ > {run_dir}/inner.pid; exec sleep 600\"' & wait $!"
    )
    proc, namespaces = _started(pod, [record])
    deadline = time.monotonic() + 30
    while not (run_dir / "inner.pid").exists() or not (run_dir / "inner.pid").read_text():
        assert time.monotonic() < deadline
        time.sleep(0.02)
    inner = int((run_dir / "inner.pid").read_text())
    here = pids.outside_ids(proc.pid)[inner]
    assert here != inner
    assert Path(f"/proc/{here}/cmdline").read_bytes().split(b"\0")[:2] == [b"sleep", b"600"]
    os.kill(here, signal.SIGKILL)
    assert proc.wait(timeout=30) == 128 + signal.SIGKILL  # the agent reports sleep's end
    assert wait_gone(namespaces) == []


def test_an_instance_on_this_machines_network_keeps_the_rest_its_own(run_dir: Path) -> None:
    """``own_network=False`` (the code's installs): algo-1 reaches a server on this machine's
    loopback, as pip reaches a package index, and is otherwise the same instance: its hostname,
    its own /tmp, a read-only /sys."""
    import dataclasses
    import socket

    pod = dataclasses.replace(make_pod(run_dir, 1), own_network=False)
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
        script = (
            f"exec 3<>/dev/tcp/127.0.0.1/{port} && echo reached; hostname; "
            "touch /tmp/mine && test -e /tmp/mine && echo mine; touch /sys/x 2>/dev/null || echo ro"
        )
        done = _run(pod, ["/bin/bash", "-c", script])
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["reached", "algo-1", "mine", "ro"]
    assert not Path("/tmp/mine").exists()
