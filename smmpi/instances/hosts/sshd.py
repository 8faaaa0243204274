"""A real sshd on port 22 of each emulated instance, configured as the Deep Learning Containers are.

Exact mode (``--exact``) reaches the workers as the container does: Open MPI's mpirun on
algo-1 runs ``ssh algo-k orted ...`` and Debian's OpenSSH server answers on algo-k. The
images' Dockerfiles configure it so, and so does each instance here:

- root's key pair in ``/root/.ssh`` (``id_ed25519``), its public half in
  ``authorized_keys``, and ``Host * / StrictHostKeyChecking no`` in ``/root/.ssh/config``
  and ``/etc/ssh/ssh_config``;
- a host key in ``/etc/ssh`` (the machine's own host keys are hidden in the instance);
- ``PermitRootLogin yes``; ``pam_loginuid`` optional (a container may not set it);
- ``/run/sshd``, the privilege-separation folder, in the instance's own ``/run``;
- ``/etc/environment`` holds a worker's environment, which an ssh session gets (the
  toolkit's worker writes it so on SageMaker before it starts sshd; algo-1 writes none).

The images make their keys when they are built; here one pair of keys (root's and the
host's, ed25519, which takes milliseconds) is made per run by the pod's first process in
a tmpfs of the pod's own mount namespace (:func:`make_keys`), copied by each instance into
its own ``/root`` (a tmpfs) and ``/etc`` (an overlay), and unmounted there. Nothing is
written to this machine's ``/root/.ssh`` or ``/etc/ssh``, and the keys go with the run.

sshd runs in the instance's PID namespace with a container's capabilities only, and dies
with the instance.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import time

from smmpi.instances.hosts import kernel

SSHD = "/usr/sbin/sshd"
KEYGEN = "ssh-keygen"
PORT = 22
USER_KEY = "id_ed25519"
HOST_KEY = "ssh_host_ed25519_key"
READY_SECONDS = 10.0
_CONFIG = (
    "# smmpi: as the Deep Learning Containers configure it\n"
    "Port 22\n"
    "PermitRootLogin yes\n"
    f"HostKey /etc/ssh/{HOST_KEY}\n"
)
_CLIENT = "Host *\n StrictHostKeyChecking no\n"
_SBIN_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def keygen() -> str | None:
    """``ssh-keygen`` here, or None."""
    for folder in ("/usr/bin", "/bin", "/usr/local/bin"):
        path = f"{folder}/{KEYGEN}"
        if os.access(path, os.X_OK):
            return path
    return None


def missing() -> tuple[str, str] | None:
    """None when this machine has what exact mode's sshd needs; else (what is missing, how
    to install it)."""
    if not os.access(SSHD, os.X_OK):
        return (
            f"{SSHD} not found",
            "install openssh-server (`make sshd`, or apt-get install openssh-server)",
        )
    if keygen() is None or not any(
        os.access(f"{d}/ssh", os.X_OK) for d in ("/usr/bin", "/bin", "/usr/local/bin")
    ):
        return (
            "ssh and ssh-keygen not found",
            "install openssh-client (apt-get install openssh-client)",
        )
    return None


def make_keys(folder: str) -> None:
    """The run's keys, in a tmpfs mounted at ``folder`` (call in the pod's mount namespace)."""
    kernel.mount("tmpfs", folder, "tmpfs", kernel.MS_NOSUID | kernel.MS_NODEV, "mode=700")
    tool = keygen() or KEYGEN
    for name, comment in ((USER_KEY, "root@algo"), (HOST_KEY, "root@algo")):
        subprocess.run(
            [tool, "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", f"{folder}/{name}"],
            check=True,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )


def _read(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def _write(path: str, data: bytes, mode: int = 0o644) -> None:
    """Replace ``path`` (a file or a link, in this instance's own mounts) with ``data``."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.chmod(path, mode)


def _environment(env: dict[str, str] | None) -> bytes:
    lines = [f"{k}={v}" for k, v in (env or {}).items() if "\n" not in v and "\n" not in k]
    return ("\n".join(lines) + "\n").encode()


def _hide_host_keys() -> None:
    """The machine's host keys are not the instance's: unlinked in the /etc overlay."""
    for name in os.listdir("/etc/ssh"):
        if name.startswith("ssh_host_"):
            with contextlib.suppress(OSError):
                os.unlink(f"/etc/ssh/{name}")


def _pam_loginuid() -> None:
    path = "/etc/pam.d/sshd"
    if not os.path.isfile(path):
        return
    text = _read(path).decode()
    lines = [
        "session optional pam_loginuid.so"
        if ln.split()[:3] == ["session", "required", "pam_loginuid.so"]
        else ln
        for ln in text.splitlines()
    ]
    _write(path, ("\n".join(lines) + "\n").encode())


def configure(keys: str, env: dict[str, str] | None) -> None:
    """In the instance's mount namespace: root's keys, the host key, sshd's configuration,
    and ``env`` in /etc/environment (None: left as this machine's)."""
    os.makedirs("/root/.ssh", mode=0o700, exist_ok=True)
    private, public = _read(f"{keys}/{USER_KEY}"), _read(f"{keys}/{USER_KEY}.pub")
    _write(f"/root/.ssh/{USER_KEY}", private, 0o600)
    _write(f"/root/.ssh/{USER_KEY}.pub", public)
    _write("/root/.ssh/authorized_keys", public, 0o600)
    _write("/root/.ssh/config", _CLIENT.encode(), 0o600)
    os.makedirs("/etc/ssh", mode=0o755, exist_ok=True)
    _hide_host_keys()
    _write(f"/etc/ssh/{HOST_KEY}", _read(f"{keys}/{HOST_KEY}"), 0o600)
    _write(f"/etc/ssh/{HOST_KEY}.pub", _read(f"{keys}/{HOST_KEY}.pub"))
    base = _read("/etc/ssh/sshd_config") if os.path.isfile("/etc/ssh/sshd_config") else b""
    _write("/etc/ssh/sshd_config", _CONFIG.encode() + base)  # sshd takes an option's first value
    client = _read("/etc/ssh/ssh_config") if os.path.isfile("/etc/ssh/ssh_config") else b""
    kept = b"\n".join(ln for ln in client.splitlines() if b"StrictHostKeyChecking" not in ln)
    _write("/etc/ssh/ssh_config", kept + b"\n    StrictHostKeyChecking no\n")
    _pam_loginuid()
    if env is not None:  # else the instance's command writes it (the toolkit's worker does)
        _write("/etc/environment", _environment(env))
    os.makedirs("/run/sshd", mode=0o755, exist_ok=True)
    kernel.umount(keys, kernel.MNT_DETACH)  # the run's keys: now only where the image has them


def start(log: str) -> int:
    """sshd -D in this instance (call after its PID namespace exists): its pid, once it listens.

    sshd logs to ``log`` (the run folder's), not to this machine's syslog.
    """
    pid = os.fork()
    if pid == 0:  # pragma: no cover (the child)
        try:
            os.setsid()
            kernel.drop_capabilities()
            null = os.open("/dev/null", os.O_RDWR)
            os.dup2(null, 0)
            os.execve(SSHD, [SSHD, "-D", "-E", log], {"PATH": _SBIN_PATH})
        finally:
            os._exit(127)
    deadline = time.monotonic() + READY_SECONDS
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            raise OSError(f"sshd ended at start (status {os.waitstatus_to_exitcode(status)})")
        with socket.socket() as probe, contextlib.suppress(OSError):
            probe.connect(("127.0.0.1", PORT))
            return pid
        time.sleep(0.005)
    raise OSError(f"sshd does not listen on port {PORT} after {READY_SECONDS:.0f} s")
