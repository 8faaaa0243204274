"""Run as every rank by test_boundary.py: what a hostile rank can see and do from its instance.

Prints one JSON line per rank. Each instance's first rank tries to leave its instance
(nsenter into PID 1, sethostname, mount, ip link/route, unshare) and marks the folders an
instance has of its own; then every rank reports what it sees.
"""

import ctypes
import json
import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

from mpi4py import MPI

comm = MPI.COMM_WORLD
rank = comm.Get_rank()
host = socket.gethostname()
local = int(os.environ["OMPI_COMM_WORLD_LOCAL_RANK"])
PRIVATE = ("/tmp", "/var/tmp", "/root", "/dev/shm", "/etc")


def tool(name):
    return shutil.which(name) or next(
        (
            f"{d}/{name}"
            for d in ("/usr/sbin", "/sbin", "/usr/bin", "/bin")
            if os.path.exists(f"{d}/{name}")
        ),
        name,
    )


def attempt(*argv):
    try:
        done = subprocess.run([tool(argv[0]), *argv[1:]], capture_output=True, timeout=30)
    except OSError as err:
        return f"could not start: {err}"
    return done.returncode


def sethostname():
    libc = ctypes.CDLL(None, use_errno=True)
    return 0 if libc.sethostname(b"escaped", 7) == 0 else ctypes.get_errno()  # 0: it worked


def open_for_writing(path):
    try:
        os.close(os.open(path, os.O_WRONLY))
    except OSError as err:
        return err.errno
    return 0


def environs():
    """Every AWS_ variable any visible process holds, and which environments were readable."""
    found, readable, refused, ranks = [], [], [], set()
    for pid in sorted((p for p in os.listdir("/proc") if p.isdigit()), key=int):
        try:
            raw = Path(f"/proc/{pid}/environ").read_bytes()
        except OSError:
            refused.append(int(pid))
            continue
        readable.append(int(pid))
        for entry in raw.split(b"\0"):
            if entry.startswith(b"AWS_"):
                found.append([int(pid), entry.decode(errors="replace")])
            if entry.startswith(b"OMPI_COMM_WORLD_RANK="):
                ranks.add(int(entry.split(b"=")[1]))
    return found, readable, refused, sorted(ranks)


def capabilities():
    caps = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("Cap"):
            name, value = line.split(":")
            caps[name] = value.strip()
    return caps


row = {"rank": rank, "host": host, "caps": capabilities()}
if local == 0:
    go = Path("/opt/ml/go")
    if host == "algo-1":
        print(json.dumps({"ready": rank}), flush=True)
        deadline = time.monotonic() + 120
        while not go.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
    row["attempts"] = {
        "nsenter -t 1 -u hostname": attempt("nsenter", "-t", "1", "-u", "hostname", "escaped"),
        "nsenter -t 1 -a": attempt("nsenter", "-t", "1", "-a", "true"),
        "hostname": attempt("hostname", "escaped"),
        "sethostname(2)": sethostname(),
        "mount tmpfs": attempt("mount", "-t", "tmpfs", "none", "/mnt"),
        "ip link set eth0 down": attempt("ip", "link", "set", "eth0", "down"),
        "ip link add": attempt("ip", "link", "add", "smmpi-x", "type", "dummy"),
        "ip route add": attempt("ip", "route", "add", "default", "dev", "eth0"),
        "unshare --uts": attempt("unshare", "--uts", "hostname", "escaped"),
        "unshare --mount": attempt("unshare", "--mount", "mount", "-t", "tmpfs", "none", "/mnt"),
        "/proc/sys/kernel/hostname": open_for_writing("/proc/sys/kernel/hostname"),
        "/proc/sysrq-trigger": open_for_writing("/proc/sysrq-trigger"),
    }
    # in a user namespace of its own a rank may do what it likes, to namespaces of its own
    row["own user namespace"] = attempt(
        "unshare",
        "-Urnm",
        "sh",
        "-c",
        "hostname inner; ip link add d0 type dummy; mount -t tmpfs none /mnt",
    )
    with open("/etc/hosts", "a") as f:
        f.write(f"198.18.99.99\tmark-{host}\n")
    for folder in PRIVATE:
        Path(folder, f"mark-{host}").write_text(host)
comm.Barrier()
row["eth0"] = Path("/sys/class/net/eth0/operstate").read_text().strip()
row["hostname"] = socket.gethostname()
row["hosts marks"] = [
    ln.split()[-1] for ln in Path("/etc/hosts").read_text().splitlines() if "mark-" in ln
]
row["marks"] = {folder: sorted(p.name for p in Path(folder).glob("mark-*")) for folder in PRIVATE}
row["etc readable"] = Path("/etc/passwd").read_text().startswith("root:")
row["home"] = os.environ.get("HOME")
row["tmpdir"] = os.environ.get("TMPDIR")
row["aws"], row["environ readable"], row["environ refused"], row["ranks seen"] = environs()
row["pids"] = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
comm.Barrier()
print(json.dumps(row), flush=True)
