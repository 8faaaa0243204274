"""One emulated instance: a process that holds its UTS, IPC, network, cgroup and mount namespaces.

The holder is forked by the pod (see pod.py), sets its namespaces up, reports on a pipe
and then serves the launch agent (service.py) until the pod ends: its namespaces, the
mounts in them and its eth0 go with it. Nothing is written to this machine's filesystem
(filesystem.py makes each part):
- / is a tmpfs carrying bind mounts of the machine's entries, so what a process makes at the
  top stays in the instance;
- /opt becomes a tmpfs carrying bind mounts of everything the machine's /opt holds, plus
  ``ml``, which is the instance's own tree;
- /tmp, /var/tmp, /root and /dev/shm are empty tmpfs of the instance's own, as a
  container's are, with the folders the run needs there (its run folder, Python, smmpi)
  bound back in place;
- /etc is an overlay of the machine's /etc: the instance reads it and writes its own copy
  (its /etc/hosts lists every algo-k);
- /sys is a sysfs of the instance's network namespace, read-only as in a container.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from smmpi import keepers
from smmpi.instances.hosts import filesystem, first, kernel, service, sshd
from smmpi.instances.hosts.strays import Strays

#: Folders each instance has of its own, empty at start (as in a fresh container).
PRIVATE = ("/tmp", "/var/tmp", "/root", "/dev/shm")


@dataclass(frozen=True)
class Instance:
    name: str  # algo-k
    address: str  # eth0's IPv4 address; "": no network of its own (this machine's)
    netmask: str
    opt_ml: str  # this instance's tree, seen at /opt/ml inside
    hosts: str  # the text of /etc/hosts inside
    sockets: str = ""  # the folder of the launch services' sockets ("": no service)
    keep: tuple[str, ...] = ()  # folders that stay the machine's when under a PRIVATE one
    env: dict[str, str] | None = field(default=None, hash=False)  # commands' environment
    records: str = ""  # where ranks record their end (rank-R.exit): "" no stray is killed
    first_pid: int = 0  # the first process id inside the instance (0: the kernel's choice)
    ssh_keys: str = ""  # exact mode: the run's keys (sshd.py), and sshd on port 22; "": none
    ssh_log: str = ""  # where this instance's sshd logs; "": the instance's command starts it
    own_copies: tuple[str, ...] = ()  # folders of ``keep`` this instance has a copy of its own
    worker: bool = True  # algo-2..N: where the toolkit writes ``env`` to /etc/environment
    joins: tuple[int, ...] = ()  # a warm instance's network and UTS namespaces (descriptors)


def set_up(instance: Instance) -> None:
    """Namespaces, hostname and mounts: everything but eth0, which the bridge side creates."""
    own_network = kernel.CLONE_NEWNET if instance.address else 0
    for namespace in instance.joins:  # warm: the instance's network and name are kept
        kernel.setns(namespace)
    made = 0 if instance.joins else kernel.CLONE_NEWUTS | own_network
    kernel.unshare(made | kernel.CLONE_NEWIPC | kernel.CLONE_NEWCGROUP | kernel.CLONE_NEWNS)
    kernel.sethostname(instance.name)
    kernel.mount(None, "/", None, kernel.MS_REC | kernel.MS_PRIVATE)
    filesystem.private_root(instance.opt_ml)
    filesystem.private_opt_ml(instance.opt_ml)
    if own_network:
        filesystem.private_sysfs()
    else:  # this machine's network, and so its sysfs, read-only
        kernel.mount("/sys", "/sys", None, kernel.MS_BIND | kernel.MS_REC)
        for point in ["/sys", *filesystem.mounts_under("/sys")]:
            kernel.read_only(point)
    own_etc = filesystem.private_etc(instance.hosts)
    if own_etc and not instance.ssh_keys:  # in exact mode the toolkit or sshd.py writes it
        filesystem.worker_environment(instance.opt_ml)
    for root in PRIVATE:
        filesystem.private_folder(root, instance.keep)
    for path in instance.own_copies:
        filesystem.own_copy(path)
    if instance.ssh_keys:
        filesystem.private_folder("/run", instance.keep)  # a container's own /run (sshd's)
        # the toolkit writes /etc/environment itself where it starts sshd (no ssh_log), and on
        # its workers only, as here
        written = instance.ssh_log and instance.worker
        sshd.configure(instance.ssh_keys, instance.env if written else None)
    if own_network:
        kernel.link_up("lo")


def hold(instance: Instance, report: int, go: int) -> int:
    """The holder's whole life (in the forked child); returns its exit status."""
    try:
        set_up(instance)
        listener = keepers.listen(instance.sockets, instance.name) if instance.sockets else None
        strays = Strays(instance.records, instance.name) if instance.records else None
        first.start(instance.first_pid, strays)
        if instance.ssh_keys and instance.ssh_log:
            sshd.start(instance.ssh_log)
        os.write(report, b"ok\n")
        if os.read(go, 1) != b"g":  # the pod has moved eth0 in, or has ended
            return 0
        if instance.address:  # (none: the instance is on this machine's network)
            kernel.link_up("eth0", instance.address, instance.netmask)
        os.write(report, b"ok\n")
    except OSError as err:
        os.write(report, f"{instance.name}: {err}\n".encode())
        return 1
    os.close(report)
    if listener is None:
        while os.read(go, 64):  # until the pod ends
            pass
        return 0
    return service.serve(listener, go, instance.env)
