"""The pod: the process tree that holds every emulated instance of one run.

``python -m smmpi.instances.hosts.pod FD`` (started by launch.py) is the *outer* process.
It reads its spec from descriptor FD (a memory file: the instances' environments, which
may hold credentials, are never written to disk), creates a PID, network, mount, UTS,
IPC and cgroup namespace (and, when not root, a user namespace that maps the user to
root), forks the *inner* process, which is PID 1 there, relays signals to it and exits
with its status.

The inner process (PID 1):
- mounts a /proc of its own, so PIDs inside mean the same to every tool, with the parts a
  container cannot write read-only (/proc/sys, /proc/sysrq-trigger, ...), as Docker does;
- forks one holder per instance (instance.py), which gives the instance a PID namespace
  of its own (a container sees only its own processes) and serves the launch agent there;
- makes, in its own network namespace, the bridge and one veth pair per instance;
- runs the command inside algo-1's namespaces, with a container's capabilities only, as
  the container runs mpirun on algo-1;
- exits with the command's status.

No process of the pod shares a namespace with this machine but the user namespace (as
in a container), and every process that runs the command's code holds Docker's default
capabilities and no more. Only PID 1 and the holders hold more, and a process with fewer
capabilities may not trace them, read their memory or environment, or enter their
namespaces.

Lifetime is the kernel's: when PID 1 of a PID namespace exits, every process in it is
killed, and the namespaces, veths, bridge and mounts go with the last of them. The inner
process dies with the outer one (PR_SET_PDEATHSIG), and launch.py starts the outer one
the same way, so a SIGKILL of smmpi leaves nothing behind.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from smmpi.instances.hosts import first, instance, kernel, plan, sshd
from smmpi.instances.hosts.survivors import let_survivors_record

SETUP_FAILED = 125  # exit status when the instances could not be set up; stderr says why
PREFIX = "smmpi: isolated hosts"
RELAYED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1)


class SetupError(Exception):
    pass


@dataclass(frozen=True)
class Holder:
    pid: int
    report: int  # read end: the holder's "ok" lines or its error
    go: int  # write end: "g" once eth0 is in its namespace


def _relay_to(target: Callable[[], int | None]) -> None:
    def handler(signo: int, _frame: object) -> None:
        pid = target()
        if pid is None:
            os._exit(128 + signo)
        os.kill(pid, signo)

    for signo in RELAYED:
        signal.signal(signo, handler)


def _status(status: int) -> int:
    code = os.waitstatus_to_exitcode(status)
    return 128 - code if code < 0 else code


def _expect_ok(holder: Holder, name: str) -> None:
    line = os.read(holder.report, 4096).decode(errors="replace").strip()
    if line != "ok":
        raise SetupError(line or f"{name}: its holder ended during set-up")


def _fork_holders(instances: list[instance.Instance]) -> list[Holder]:
    holders: list[Holder] = []
    for inst in instances:
        report_r, report_w = os.pipe()
        go_r, go_w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(report_r)
            os.close(go_w)
            os._exit(instance.hold(inst, report_w, go_r))
        os.close(report_w)
        os.close(go_r)
        holders.append(Holder(pid, report_r, go_w))
    return holders


def _wire(spec: dict[str, Any], holders: list[Holder], instances: list[instance.Instance]) -> None:
    """Bridge + veths in this namespace (none on this machine's network), then each holder
    brings its eth0 up."""
    if spec.get("own_network", True) and not spec.get("warm"):  # warm: wired already
        batch = plan.bridge_batch([h.pid for h in holders])
        done = subprocess.run(
            [spec["ip"], "-batch", "-"], input=batch, capture_output=True, text=True, check=False
        )
        if done.returncode != 0:
            raise SetupError(f"ip -batch: {(done.stderr or done.stdout).strip()}")
    for holder in holders:
        os.write(holder.go, b"g")
    for holder, inst in zip(holders, instances, strict=True):
        _expect_ok(holder, inst.name)


def _pid_stride(count: int) -> int:
    """Each instance's process ids start at a multiple of this, so that ids inside the
    instances are unique in the run (smmpi signals a rank by the id it recorded)."""
    try:
        with open("/proc/sys/kernel/pid_max") as f:
            pid_max = int(f.read())
    except (OSError, ValueError):
        pid_max = 32768
    return max(pid_max // (count + 1), 2)


def _sshd_log(spec: dict[str, Any], name: str) -> str:
    """Where ``name``'s sshd logs, when the pod starts it: exact mode, unless the instances
    run the container's start, which starts sshd itself (as the toolkit does)."""
    if not spec.get("ssh_keys") or spec.get("worker_argv"):
        return ""
    return f"{spec['run_dir']}/.smmpi/sshd-{name}.log"


def set_up(spec: dict[str, Any]) -> list[Holder]:
    hosts: list[str] = spec["hosts"]
    envs: list[dict[str, str]] = spec.get("host_env") or [None] * len(hosts)
    warm: list[int] = spec.get("warm") or []  # lease, bridge, then two namespaces per instance
    instances = [
        instance.Instance(
            name,
            plan.address(k) if spec.get("own_network", True) else "",
            plan.netmask(),
            spec["opt_ml"][k - 1],
            spec["hosts_text"],
            spec["sockets"],
            tuple(spec["keep"]),
            envs[k - 1],
            spec["records"] or "",
            k * _pid_stride(len(hosts)),
            spec.get("ssh_keys") or "",
            _sshd_log(spec, name),
            tuple(spec.get("own_copies") or ()),
            worker=k > 1,
            joins=tuple(warm[2 * k : 2 * k + 2]),
        )
        for k, name in enumerate(hosts, start=1)
    ]
    holders = _fork_holders(instances)
    for holder, inst in zip(holders, instances, strict=True):
        _expect_ok(holder, inst.name)
    _wire(spec, holders, instances)
    return holders


def _exec_in(holder: Holder, spec: dict[str, Any]) -> None:
    """In the forked child: a process of algo-1 with a container's capabilities, then argv."""
    try:
        kernel.enter(holder.pid)
        os.chdir(spec["cwd"])
        for signo in RELAYED:
            signal.signal(signo, signal.SIG_DFL)
        kernel.drop_capabilities()
        os.execvpe(spec["argv"][0], spec["argv"], spec["env"])
    except OSError as err:
        print(
            f"{PREFIX}: cannot start {spec['argv'][0]} on {spec['hosts'][0]}: {err}",
            file=sys.stderr,
        )
        sys.stderr.flush()
    os._exit(127)


def _start_on_workers(holders: list[Holder], spec: dict[str, Any]) -> None:
    """``worker_argv`` (exact mode's container start) on algo-2..N, each with its own
    environment; they end with the pod, as a job's workers end with it."""
    argv = spec.get("worker_argv")
    if not argv:
        return
    envs = spec.get("host_env") or [spec["env"]] * len(holders)
    for holder, env in zip(holders[1:], envs[1:], strict=True):
        kernel.enter(holder.pid, ("pid_for_children",))
        if os.fork() == 0:
            _exec_in(holder, {**spec, "argv": argv, "env": env})


def inner(spec: dict[str, Any]) -> int:
    """PID 1 of the pod: set up, run the command on algo-1, reap until it ends."""
    command: list[int] = []
    _relay_to(lambda: command[0] if command else None)
    kernel.mount(None, "/", None, kernel.MS_REC | kernel.MS_PRIVATE)
    flags = kernel.MS_NOSUID | kernel.MS_NODEV | kernel.MS_NOEXEC
    kernel.mount("proc", "/proc", "proc", flags)
    try:
        first.protect_proc()
        if spec.get("ssh_keys"):
            sshd.make_keys(spec["ssh_keys"])
        holders = set_up(spec)
    except (SetupError, OSError, subprocess.CalledProcessError) as err:
        print(f"{PREFIX}: set-up failed: {err}", file=sys.stderr, flush=True)
        return SETUP_FAILED
    _start_on_workers(holders, spec)
    kernel.enter(holders[0].pid, ("pid_for_children",))  # the command is algo-1's process
    pid = os.fork()
    if pid == 0:
        _exec_in(holders[0], spec)
    command.append(pid)
    while True:  # PID 1 reaps every orphan; the run ends with the command
        done, status = os.wait()
        if done == pid:
            let_survivors_record({h.pid for h in holders})
            return _status(status)


def outer(spec: dict[str, Any]) -> int:
    """Create the pod's namespaces, fork its PID 1, relay signals, pass its status on."""
    warm: list[int] = spec.get("warm") or []
    for fd in warm:  # the pod's own processes hold them, no command it runs
        os.set_inheritable(fd, False)
    own_network = spec.get("own_network", True) and not warm
    try:
        if spec["userns"]:
            uid, gid = os.getuid(), os.getgid()
            kernel.unshare(kernel.CLONE_NEWUSER)
            kernel.map_root(uid, gid)
        if warm:  # the kept bridge's network namespace
            kernel.setns(warm[1])
        kernel.unshare(
            kernel.CLONE_NEWPID
            | (kernel.CLONE_NEWNET if own_network else 0)
            | kernel.CLONE_NEWNS
            | kernel.CLONE_NEWUTS
            | kernel.CLONE_NEWIPC
            | kernel.CLONE_NEWCGROUP
        )
    except OSError as err:
        print(f"{PREFIX}: cannot create namespaces: {err}", file=sys.stderr, flush=True)
        return SETUP_FAILED
    child = os.fork()
    if child == 0:
        code = SETUP_FAILED
        try:
            kernel.die_with_parent(signal.SIGKILL)
            code = inner(spec)
        finally:
            sys.stderr.flush()
            os._exit(code)
    _relay_to(lambda: child)
    _, status = os.waitpid(child, 0)
    return _status(status)


def read_spec(fd: int) -> dict[str, Any]:
    """The spec from descriptor ``fd`` (a memory file, closed here: nothing else inherits it)."""
    with os.fdopen(fd, "rb") as f:
        f.seek(0)
        spec: dict[str, Any] = json.loads(f.read())
    return spec


def main(argv: list[str]) -> int:
    return outer(read_spec(int(argv[1])))


if __name__ == "__main__":
    sys.exit(main(sys.argv))
