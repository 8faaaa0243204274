"""Whether this machine lets smmpi make isolated hosts, and if not, why and what fixes it.

The quick checks (the tools, the paths, one unshare(2)) run before every run that may use
isolated hosts; ``smmpi doctor`` also starts a real two-instance pod.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from functools import lru_cache
from pathlib import Path

from smmpi.instances.hosts import kernel
from smmpi.instances.hosts.launch import Pod, agent_path, needs_user_namespace, start, tool


def _namespaces_refused() -> str | None:
    """Try, in a forked child, to create the namespaces a pod needs (a few milliseconds)."""
    flags = kernel.CLONE_NEWNET | kernel.CLONE_NEWUTS | kernel.CLONE_NEWNS
    if needs_user_namespace():
        flags |= kernel.CLONE_NEWUSER
    read_end, write_end = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover (runs in the child)
        code = 0
        try:
            kernel.unshare(flags)
        except OSError as err:
            os.write(write_end, str(err).encode())
            code = 1
        os._exit(code)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        message = pipe.read().decode(errors="replace")
    os.waitpid(child, 0)
    return message or None


#: What lets a refused unshare(2) succeed.
NAMESPACES_FIX = (
    "run as root, or allow unprivileged user namespaces "
    "(sysctl kernel.unprivileged_userns_clone=1 / user.max_user_namespaces > 0)"
)
PROBE_FIX = "`smmpi run demo -N 2 -n 1 --isolation hosts` shows the whole error"


@lru_cache(maxsize=1)
def quick_unavailable() -> tuple[str, str] | None:
    """None when this machine lets smmpi create isolated hosts; else (why not, in one line;
    what fixes it). Cheap enough to run before every run: the tools, the paths, one unshare(2).
    """
    if not sys.platform.startswith("linux"):
        why = f"isolated hosts need Linux namespaces; this is {sys.platform}"
        return why, "run on Linux (processes mode runs here)"
    if tool("ip") is None:
        return "`ip` not found (iproute2)", "install iproute2 (apt-get install iproute2)"
    for path in ("/opt", "/etc"):
        if not os.path.exists(path):
            why = f"{path} does not exist, so it cannot be overlaid per instance"
            return why, f"create it (mkdir {path})"
    refused = _namespaces_refused()
    if refused:
        who = "root" if not needs_user_namespace() else "an unprivileged user"
        return f"the kernel refuses namespaces to {who} here ({refused})", NAMESPACES_FIX
    return None


def quick_reason() -> str | None:
    """Why isolated hosts cannot be made here (:func:`quick_unavailable`), or None."""
    found = quick_unavailable()
    return found[0] if found else None


def unavailable() -> tuple[str, str] | None:
    """:func:`quick_unavailable`, then a real two-instance pod whose agent hops to algo-2."""
    found = quick_unavailable()
    if found:
        return found
    with tempfile.TemporaryDirectory(prefix="smmpi-probe-") as tmp:
        run_dir = Path(tmp)
        trees = (run_dir / "algo-1", run_dir / "algo-2")
        for tree in trees:
            tree.mkdir()
        pod = Pod(("algo-1", "algo-2"), trees, run_dir)
        on_algo_2 = "'test \"$(hostname)\" = algo-2'"
        hop = f'test "$(hostname)" = algo-1 && {agent_path(pod)} algo-2 {on_algo_2}'
        probe = start(
            pod, ["/bin/sh", "-c", hop], {"PATH": "/usr/bin:/bin"}, "/", stderr=subprocess.PIPE
        )
        _, err = probe.communicate(timeout=60)
    if probe.returncode == 0:
        return None
    lines = err.decode(errors="replace").strip().splitlines()
    return (
        lines[-1] if lines else f"a two-instance probe exited with {probe.returncode}"
    ), PROBE_FIX


def unavailable_reason() -> str | None:
    """Why isolated hosts do not run here (:func:`unavailable`), or None."""
    found = unavailable()
    return found[0] if found else None
