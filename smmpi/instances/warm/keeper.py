"""The keeper: the process that holds warm instances between runs.

``python -m smmpi.instances.warm.keeper ROOT FOLDER KEY COUNT SECONDS FD`` (lease.py starts it,
in a session of its own, with nothing of the user's environment) makes a network namespace
of its own for the bridge, forks one holder per instance (network and UTS namespaces:
hostname algo-k, lo and eth0 up with algo-k's address) and wires them with plan.bridge_batch,
as a pod does. It then listens on ``FOLDER/KEY.sock`` (0600, in a 0700 folder) and says
``ok`` on descriptor FD.

A client of the same user sends one line: ``take`` gets ``ok PID...`` (the holders' ids) and
holds the pool until it closes the connection (one run at a time: another gets ``busy``);
``end`` ends the keeper; ``keep N`` makes its idle period N seconds. It ends by itself
SECONDS after the last lease ended, on SIGTERM, SIGINT or SIGHUP, and with the process
``SMMPI_WARM_OWNER`` names, when its environment has one (serve: a pool does not outlive it,
however serve ends). Its holders die with it
(PR_SET_PDEATHSIG), and their namespaces with the last process in them: a run that has joined
them keeps them until it ends.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import socket
import subprocess
import sys
import time
from typing import NoReturn

from smmpi import keepers
from smmpi.instances.hosts import kernel, plan


def _holder(name: str, address: str, report: int, go: int) -> NoReturn:
    """One instance's network and UTS namespaces, held until the keeper ends."""
    code = 1
    try:
        kernel.die_with_parent(signal.SIGKILL)
        kernel.unshare(kernel.CLONE_NEWNET | kernel.CLONE_NEWUTS)
        kernel.sethostname(name)
        kernel.link_up("lo")
        os.write(report, b"ok\n")
        if os.read(go, 1) == b"g":
            kernel.link_up("eth0", address, plan.netmask())
            os.write(report, b"ok\n")
            while os.read(go, 64):  # until the keeper ends
                pass
        code = 0
    except OSError as err:
        with contextlib.suppress(OSError):
            os.write(report, f"{name}: {err}\n".encode())
    os._exit(code)


def _expect_ok(report: int, name: str) -> None:
    said = os.read(report, 4096).decode(errors="replace").strip()
    if said != "ok":
        raise OSError(said or f"{name}: its holder ended during set-up")


def make_instances(count: int, ip: str) -> list[int]:
    """Fork ``count`` holders and wire them to a bridge here; their process ids."""
    holders: list[tuple[int, int, int]] = []
    for k in range(1, count + 1):
        report_r, report_w = os.pipe()
        go_r, go_w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(report_r)
            os.close(go_w)
            _holder(f"algo-{k}", plan.address(k), report_w, go_r)
        os.close(report_w)
        os.close(go_r)
        holders.append((pid, report_r, go_w))
    for k, (_, report, _) in enumerate(holders, start=1):
        _expect_ok(report, f"algo-{k}")
    batch = plan.bridge_batch([pid for pid, _, _ in holders])
    done = subprocess.run([ip, "-batch", "-"], input=batch, capture_output=True, text=True)
    if done.returncode != 0:
        raise OSError(f"ip -batch: {(done.stderr or done.stdout).strip()}")
    for k, (_, report, go) in enumerate(holders, start=1):
        os.write(go, b"g")  # the write end stays open: the holder's EOF is the keeper's end
        _expect_ok(report, f"algo-{k}")
        os.close(report)
    return [pid for pid, _, _ in holders]


OWNER = "SMMPI_WARM_OWNER"  # a process id: the keeper ends with it (serve's pools end with serve)


def _owner() -> int | None:
    """A descriptor that is readable once the owner (``OWNER``) has ended."""
    owner = os.environ.get(OWNER, "")
    return os.pidfd_open(int(owner)) if owner.isdigit() else None


def serve(
    listener: socket.socket, holders: list[int], seconds: float, owner: int | None = None
) -> None:
    """Lend the instances, one run at a time, until SECONDS without a run (or ``end``, or
    the owner's end)."""
    chooser = selectors.DefaultSelector()
    chooser.register(listener, selectors.EVENT_READ)
    if owner is not None:
        chooser.register(owner, selectors.EVENT_READ)
    lease: socket.socket | None = None
    idle_since = time.monotonic()
    while True:
        wait = None if lease is not None else idle_since + seconds - time.monotonic()
        if wait is not None and wait <= 0:
            return
        for key, _ in chooser.select(wait):
            if key.fileobj == owner:  # its owner has ended
                return
            if key.fileobj is lease:  # the run has ended (or says nothing: the same)
                chooser.unregister(lease)
                lease.close()
                lease, idle_since = None, time.monotonic()
                continue
            conn, _ = listener.accept()
            asked = keepers.asked(conn)
            if asked == "end":
                conn.sendall(b"ended\n")
                return
            if asked.startswith("keep ") and asked[5:].isdigit():  # a new idle period
                seconds = float(asked[5:])
                conn.sendall(b"kept\n")
                conn.close()
                continue
            if asked != "take" or lease is not None:
                with contextlib.suppress(OSError):
                    conn.sendall(b"busy\n" if asked == "take" else b"refused\n")
                conn.close()
                continue
            conn.sendall(("ok " + " ".join(map(str, holders)) + "\n").encode())
            lease = conn
            chooser.register(lease, selectors.EVENT_READ)


def _ending(signo: int, _frame: object) -> None:
    raise SystemExit(128 + signo)


def main(argv: list[str]) -> int:
    """``ROOT FOLDER KEY COUNT SECONDS FD``: make, lend and end the warm instances."""
    folder, key, count, seconds, ready = argv[1], argv[2], int(argv[3]), float(argv[4]), argv[5]
    for signo in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signo, _ending)
    name = f"{key}.sock"
    listener: socket.socket | None = None
    try:
        owner = _owner()  # gone already: OSError, and no keeper
        kernel.unshare(kernel.CLONE_NEWNET)  # the bridge's own: none on this machine's network
        holders = make_instances(count, os.environ.get("SMMPI_IP", "ip"))
        os.umask(0o177)
        listener = keepers.listen(folder, name)
        os.write(int(ready), b"ok\n")
    except OSError as err:
        with contextlib.suppress(OSError):
            os.write(int(ready), f"{err}\n".encode())
        return 1
    os.close(int(ready))
    mine = os.stat(os.path.join(folder, name)).st_ino
    try:
        serve(listener, holders, seconds, owner)
    finally:
        with contextlib.suppress(OSError):  # unless another keeper has taken its name since
            if os.lstat(os.path.join(folder, name)).st_ino == mine:
                os.unlink(os.path.join(folder, name))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
