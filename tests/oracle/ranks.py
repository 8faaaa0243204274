"""Each host's rank environment in the container, from what the toolkit recorded.

Only Open MPI's documented ``-x`` rule is applied here; every value comes from
the toolkit: on algo-1, ranks inherit mpirun's environment (the master's
framework process); on algo-2..N, orted is started over ssh and its ranks get
``/etc/environment`` (which the worker's toolkit wrote) through PAM. On every
host, each ``-x NAME=VALUE`` of algo-1's line sets NAME, and each ``-x NAME``
sets NAME to algo-1's value.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tests.oracle.compare import ORACLE_ONLY


def program_start(command: Sequence[str]) -> int:
    """Index of the interpreter in the mpirun line (``<python> -m mpi4py ...``)."""
    for i in range(1, len(command) - 1):
        if command[i] == "-m" and command[i + 1] == "mpi4py":
            return i - 1
    raise ValueError("no '-m mpi4py' in the mpirun line")


def forwarded(command: Sequence[str], master_env: Mapping[str, str]) -> dict[str, str]:
    """What the ``-x`` options of mpirun's own arguments set on every rank."""
    out: dict[str, str] = {}
    args = list(command[: program_start(command)])
    for i, token in enumerate(args[:-1]):
        if token == "-x":
            name, eq, value = args[i + 1].partition("=")
            if eq:
                out[name] = value
            elif name in master_env:
                out[name] = master_env[name]
    return out


def parse_etc_environment(text: str) -> dict[str, str]:
    env: dict[str, str] = {}
    for line in text.splitlines():
        name, eq, value = line.partition("=")
        if eq:
            env[name] = value
    return env


def rank_envs(hosts: Mapping[str, Any]) -> dict[str, dict[str, str]]:
    """host -> the environment every rank on it starts with (Open MPI's own variables aside)."""
    master = hosts["algo-1"]
    fwd = forwarded(master["command"], master["environ"])
    out = {}
    for host, state in hosts.items():
        base = (
            dict(state["environ"])
            if host == "algo-1"
            else parse_etc_environment(state["etc_environment"])
        )
        env = {**base, **fwd}
        out[host] = {k: v for k, v in env.items() if k not in ORACLE_ONLY}
    return out
