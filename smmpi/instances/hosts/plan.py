"""What the isolated instances look like: pure functions from host names to text.

Addresses come from 198.18.0.0/15, the block RFC 2544 reserves for benchmarking
network devices (IANA special-purpose registry: not globally routable). algo-k is
198.18.0.0 + k on one /15, so up to 131 070 instances fit and none is ever a real
address. The bridge has no address, no instance has a default route and nothing is
NATed: the instances reach each other and nothing else.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence

NETWORK = ipaddress.IPv4Network("198.18.0.0/15")
BRIDGE = "smmpi0"
LAUNCH_AGENT = "agent"  # file name of the launch agent in the run folder (see agent.py)


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
