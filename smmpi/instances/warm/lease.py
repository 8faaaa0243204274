"""A run's lease on warm instances: find this shape's keeper (or start it) and take its hosts.

The keepers' sockets live in ``$SMMPI_WARM_DIR`` (default ``~/.smmpi/warm``), a folder of this
user's, 0700, never a link; each is named after the shape it keeps (isolation mode, instances,
processes per instance, instance type: ``hosts-3x2-ml.c5.2xlarge.sock``). A socket whose keeper
is gone (killed) is removed by the next run of its shape, which starts a new keeper.

A lease is a connection to the keeper and, for each instance, its network and UTS
namespaces, opened here (descriptors the pod inherits). The pod holds the connection: the
lease ends with the pod, and the keeper's idle time starts then.
"""

from __future__ import annotations

import contextlib
import os
import re
import socket
import sys
from dataclasses import dataclass
from pathlib import Path

from smmpi import keepers
from smmpi.aws.facts import KEEP_ALIVE_LIMIT
from smmpi.errors import BadInput
from smmpi.instances.hosts import launch
from smmpi.instances.warm import keeper

ENV = "SMMPI_KEEP_WARM"  # seconds; smmpi run --keep-warm sets it for the run
POOL = "SMMPI_WARM_POOL"  # a pool's name, which replaces the shape's (serve's warm pools)
OWNER = keeper.OWNER
_BOOT = (
    "import sys; sys.path.insert(0, sys.argv[1]); "
    "from smmpi.instances.warm.keeper import main; sys.exit(main(sys.argv[1:]))"
)
_ROOT = str(Path(__file__).resolve().parents[3])
WarmRefused = keepers.Refused  # why a run cannot have warm instances (it runs cold)
folder = keepers.folder


def seconds(value: object, field: str = "--keep-warm") -> int:
    """``--keep-warm``'s value: whole seconds from 0 to the warm-pool limit."""
    text = str(value).strip()
    if not text.isdigit() or int(text) > KEEP_ALIVE_LIMIT:
        raise BadInput(field, value, f"whole seconds from 0 to {KEEP_ALIVE_LIMIT}")
    return int(text)


def requested() -> int:
    """The run's keep-warm seconds (0: none)."""
    return seconds(os.environ.get(ENV) or "0", ENV)


def shape_key(mode: str, instances: int, ppn: int, instance_type: str) -> str:
    """The name of a shape's keeper: only runs of the very same shape share it."""
    return re.sub(r"[^A-Za-z0-9.-]", "_", f"{mode}-{instances}x{ppn}-{instance_type}")


@dataclass
class Lease:
    """Warm instances taken for one run: the keeper's connection and their namespaces."""

    conn: int  # the connection to the keeper (a descriptor)
    bridge: int  # the keeper's network namespace, where the bridge is (a descriptor)
    namespaces: tuple[tuple[int, int], ...]  # per instance: its network and UTS namespaces
    cold: bool  # this run started the keeper

    def fds(self) -> tuple[int, ...]:
        """What the pod inherits: the connection, the bridge's namespace, then each
        instance's two. Whoever starts the pod closes this process's copies once it has."""
        return (self.conn, self.bridge, *(fd for pair in self.namespaces for fd in pair))


def _start_keeper(where: Path, key: str, count: int, keep: int) -> None:
    env = {**launch.pod_env(), "SMMPI_IP": launch.tool("ip") or "ip"}
    if os.environ.get(OWNER, "").isdigit():
        env[OWNER] = os.environ[OWNER]
    argv = [sys.executable, "-S", "-E", "-c", _BOOT, _ROOT, str(where), key, str(count)]
    keepers.start([*argv, str(keep)], env, key)


def _namespaces(keeper: int, holders: list[int]) -> tuple[tuple[int, int], ...]:
    """The keeper's network namespace, then each holder's network and UTS namespaces, once
    it is known to be the keeper's child."""
    opened: list[tuple[int, int]] = []
    try:
        bridge = os.open(f"/proc/{keeper}/ns/net", os.O_RDONLY | os.O_CLOEXEC)
        opened.append((bridge, bridge))
        for pid in holders:
            with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as status:
                parent = next((ln.split()[1] for ln in status if ln.startswith("PPid:")), "")
            if parent != str(keeper):
                raise WarmRefused(f"warm instance {pid} is not its keeper's")
            net = os.open(f"/proc/{pid}/ns/net", os.O_RDONLY | os.O_CLOEXEC)
            opened.append((net, os.open(f"/proc/{pid}/ns/uts", os.O_RDONLY | os.O_CLOEXEC)))
    except (OSError, WarmRefused):
        for pair in opened:
            for fd in set(pair):
                os.close(fd)
        raise
    return tuple(opened)


def _ask(sock: socket.socket, count: int) -> tuple[tuple[int, int], ...] | None:
    sock.settimeout(keepers.START_SECONDS)
    sock.sendall(b"take\n")
    answer = sock.recv(4096).decode(errors="replace").split()
    if answer[:1] != ["ok"] or len(answer) != count + 1:
        return None  # busy (another run has it): this one runs cold
    keeper = keepers.peer_pid(sock)
    sock.settimeout(None)
    return _namespaces(keeper, [int(p) for p in answer[1:]])


def take(key: str, count: int, keep: int) -> Lease | None:
    """Warm instances of shape ``key`` for one run (a keeper is started if there is none);
    None when another run holds them. :class:`WarmRefused` says why there are none."""
    if launch.needs_user_namespace():
        raise WarmRefused("warm instances need root here (a user namespace cannot join them)")
    where = folder()
    path = where / f"{key}.sock"
    sock, cold = keepers.connect(path), False
    if sock is None:
        _start_keeper(where, key, count, keep)
        sock, cold = keepers.connect(path), True
    if sock is None:
        raise WarmRefused(f"the keeper of {key} does not answer")
    try:
        namespaces = _ask(sock, count)
    except (OSError, WarmRefused):
        sock.close()
        raise
    if namespaces is None:
        sock.close()
        return None
    return Lease(sock.detach(), namespaces[0][0], namespaces[1:], cold)


def for_run(instances: int, ppn: int, instance_type: str) -> Lease | None:
    """The lease of an isolated-hosts run that asked for warm instances (None: a cold run,
    with one line on stderr when it asked and cannot have them)."""
    keep = requested()
    if not keep:
        return None
    key = shape_key("hosts", instances, ppn, instance_type)
    if os.environ.get(POOL):  # the pool's own name (serve says which jobs match it)
        key = re.sub(r"[^A-Za-z0-9.-]", "_", os.environ[POOL])
    try:
        lease = take(key, instances, keep)
    except (OSError, WarmRefused) as err:
        print(f"smmpi: --keep-warm: {err}; this run makes its own instances", file=sys.stderr)
        return None
    how = "made and kept" if lease is None or lease.cold else "reused; kept"
    busy = " (another run holds them: this one makes its own)" if lease is None else ""
    print(f"smmpi: warm instances {key}: {how} {keep} s after the run{busy}", file=sys.stderr)
    return lease


def unused(why: str) -> None:
    """One line when a run that asked for warm instances cannot keep them (``why``)."""
    if requested():
        print(f"smmpi: --keep-warm: {why}; nothing is kept", file=sys.stderr)


def end_all() -> list[str]:
    """``--keep-warm 0``: end every keeper of this user's; the shapes they kept (and
    ``sdk/KEY`` for each SDK kept imported: smmpi/sdk/warm.py)."""
    try:
        where = folder(create=False)
    except (FileNotFoundError, WarmRefused):
        return []
    found = sorted(where.glob("*.sock")) + sorted(where.glob("sdk/*.sock"))  # (SMMPI_WARM_SDK's)
    ended = [path for path in found if keepers.tell(path)]
    return [str(path.relative_to(where))[: -len(".sock")] for path in ended]


def end(where: Path, key: str | None = None) -> None:
    """End the keeper ``key`` in ``where`` (None: every keeper there)."""
    paths = [where / f"{key}.sock"] if key is not None else list(where.glob("*.sock"))
    for path in paths:
        with contextlib.suppress(OSError, WarmRefused):
            keepers.tell(path)


def keep(where: Path, key: str, seconds: int) -> None:
    """Keeper ``key`` in ``where`` now ends ``seconds`` after its last run (when there is one)."""
    with contextlib.suppress(OSError, WarmRefused):
        keepers.tell(where / f"{key}.sock", f"keep {seconds}")
