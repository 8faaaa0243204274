"""A rank's view of its instance in exact mode: sshd, keys, and how the rank was started."""

import hashlib
import json
import os
import socket

from mpi4py import MPI


def comm(pid: str) -> str:
    with open(f"/proc/{pid}/comm") as f:
        return f.read().strip()


def listens() -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", 22)) == 0


def digest(path: str) -> str:
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


rank = MPI.COMM_WORLD.Get_rank()
view = {
    "rank": rank,
    "host": socket.gethostname(),
    "processes": sorted({comm(p) for p in os.listdir("/proc") if p.isdigit()}),
    "listens": listens(),
    "ssh": sorted(os.listdir("/root/.ssh")),
    "authorized": digest("/root/.ssh/authorized_keys"),
    "host_keys": sorted(n for n in os.listdir("/etc/ssh") if n.startswith("ssh_host_")),
    "host_key": digest("/etc/ssh/ssh_host_ed25519_key.pub"),
    "environment_path": any(
        line.startswith("PATH=") for line in open("/etc/environment").read().splitlines()
    ),
}
print("PROBE " + json.dumps(view), flush=True)
