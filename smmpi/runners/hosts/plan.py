"""What the isolated instances look like: pure functions from host names to text.

Addresses come from 198.18.0.0/15, the block RFC 2544 reserves for benchmarking
network devices (IANA special-purpose registry: not globally routable). algo-k is
198.18.0.0 + k on one /15, so up to 131 070 instances fit and none is ever a real
address. The bridge has no address, no instance has a default route and nothing is
NATed: the instances reach each other and nothing else.
"""

from __future__ import annotations

import ipaddress
import shlex
from collections.abc import Mapping, Sequence

NETWORK = ipaddress.IPv4Network("198.18.0.0/15")
BRIDGE = "smmpi0"
LAUNCH_AGENT = "agent"  # file name of the launch agent in the run folder


def address(index: int) -> str:
    """algo-``index`` (1-based) -> its eth0 address."""
    if not 1 <= index < NETWORK.num_addresses - 1:
        raise ValueError(f"instance index {index} outside {NETWORK}")
    return str(NETWORK.network_address + index)


def netmask() -> str:
    return str(NETWORK.netmask)


def hosts_file(hosts: Sequence[str]) -> str:
    """/etc/hosts of every instance: loopback, then every algo-k."""
    lines = ["127.0.0.1\tlocalhost", "::1\tlocalhost ip6-localhost ip6-loopback"]
    lines += [f"{address(i)}\t{name}" for i, name in enumerate(hosts, start=1)]
    return "\n".join(lines) + "\n"


def bridge_batch(holders: Sequence[int]) -> str:
    """``ip -batch`` input run in the bridge's own network namespace.

    One veth pair per instance: ``v<k>`` stays on the bridge, its peer moves into the
    instance's namespace (held by process ``holders[k-1]``) under the name eth0.
    """
    lines = [f"link add {BRIDGE} type bridge", f"link set {BRIDGE} up"]
    for k, pid in enumerate(holders, start=1):
        lines.append(f"link add v{k} type veth peer name eth0 netns {pid}")
        lines.append(f"link set v{k} master {BRIDGE} up")
    return "\n".join(lines) + "\n"


def env_file(env: Mapping[str, str]) -> str:
    """A host's environment as ``sh`` reads it (``set -a; . FILE``): one quoted line each."""
    return "".join(
        f"{name}={shlex.quote(value)}\n"
        for name, value in sorted(env.items())
        if name.isidentifier() and name.isascii()
    )


def agent_script(holders: Mapping[str, int], nsenter: str, env_dir: str | None = None) -> str:
    """Open MPI's ``plm_rsh_agent``: ``agent HOST COMMAND...`` runs COMMAND on HOST.

    Open MPI calls it as it would call ssh, with the remote command as words that a
    login shell joins and runs; so does this agent, inside HOST's UTS, network and
    mount namespaces. With ``env_dir``, the command starts with HOST's own environment
    (``env_dir/HOST``, see :func:`env_file`) as an ssh session on a SageMaker worker
    does; without, with the caller's. An unknown host fails as ssh would, with 255.
    """
    cases = "\n".join(f"  {shlex.quote(h)}) pid={pid} ;;" for h, pid in holders.items())
    run = '/bin/sh -c "$*"'
    if env_dir is not None:
        login = 'set -a; . "$0"; set +a; exec /bin/sh -c "$1"'
        where = f'{shlex.quote(env_dir)}/"$host"'
        run = f'/usr/bin/env -i /bin/sh -c {shlex.quote(login)} {where} "$*"'
    return f"""#!/bin/sh
# smmpi launch agent: enters emulated instance HOST's namespaces and runs the command there.
host="$1"
case "$host" in
{cases}
  *) echo "smmpi agent: no emulated instance named $host" >&2; exit 255 ;;
esac
shift
exec {shlex.quote(nsenter)} -t "$pid" -u -n -m -- {run}
"""
