"""The largest world a local run emulates, checked before anything is created.

Every emulated host's ``resourceconfig.json`` and ``SM_*`` variables list every
host, so the bytes written grow with the square of the number of hosts, and
each rank's environment with the number of hosts. The bounds:

- at most ``MAX_INSTANCES`` emulated hosts and ``MAX_PPN`` processes per host
  (the bounds of every job, :mod:`smmpi.spec.world`), and ``MAX_RANKS`` ranks
  in all (one machine runs them all);
- at most ``MAX_TREE_BYTES`` of configuration files and host variables over
  all hosts, and no variable longer than Linux accepts (``MAX_VARIABLE_BYTES``);
- an mpirun command line of at most ``MAX_ARGV_BYTES`` (each host's variables
  travel in a file, not on the command line, so this bounds only the per-host
  app contexts and the program's own arguments).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from pathlib import Path

from smmpi.errors import BadInput
from smmpi.runners.local.argv import host_env, rank_argv
from smmpi.spec.world import MAX_INSTANCES, MAX_PPN
from smmpi.toolkit.plan import ContainerPlan

MAX_RANKS = 1024
MAX_TREE_BYTES = 256 * 1024 * 1024
MAX_VARIABLE_BYTES = 128 * 1024 - 1  # Linux's MAX_ARG_STRLEN, "NAME=value" included
MAX_ARGV_BYTES = 1024 * 1024  # half of the usual ARG_MAX, the rest is the environment


def check_world(instances: int, ppn: int) -> None:
    """Instances, processes per host and ranks within the bounds (one line if not)."""
    if instances > MAX_INSTANCES:
        raise BadInput("instances", instances, f"1 to {MAX_INSTANCES} emulated hosts locally")
    if ppn > MAX_PPN:
        raise BadInput("ppn", ppn, f"1 to {MAX_PPN} processes per host in a local run")
    if instances * ppn > MAX_RANKS:
        raise BadInput(
            "ranks (instances x ppn)",
            instances * ppn,
            f"at most {MAX_RANKS} ranks in a local run",
        )


def check_host(env: Mapping[str, str], files: Mapping[str, object], instances: int) -> None:
    """One host's variables and config files, times the number of hosts, within the bounds."""
    for key, value in env.items():
        size = len(key.encode()) + 1 + len(value.encode())
        if size > MAX_VARIABLE_BYTES:
            raise BadInput(
                f"environment variable {key}",
                f"{size} bytes",
                f"at most {MAX_VARIABLE_BYTES} bytes (Linux's limit for one variable)",
            )
    per_host = sum(len(k) + len(v) + 2 for k, v in env.items())
    per_host += sum(len(json.dumps(content, indent=2)) for content in files.values())
    if per_host * instances > MAX_TREE_BYTES:
        raise BadInput(
            "host trees",
            f"{per_host * instances} bytes of configuration over {instances} hosts",
            f"at most {MAX_TREE_BYTES} bytes (fewer hosts, or shorter hyperparameters)",
        )


def check_argv(argv: list[str]) -> None:
    size = sum(len(a.encode()) + 1 for a in argv)
    if size > MAX_ARGV_BYTES:
        raise BadInput(
            "mpirun command line",
            f"{size} bytes",
            f"at most {MAX_ARGV_BYTES} bytes (fewer hosts, or shorter program arguments)",
        )


def check_bounds(planned: ContainerPlan, run_dir: Path, python: str = sys.executable) -> None:
    """A planned world within :func:`check_world`'s bounds: its host files and mpirun's
    command line within bounds, before anything is created (``run_dir`` need not exist:
    sizes are computed for its path)."""
    shape = planned.shape
    host = shape.hosts[0]
    check_host(host_env(shape, run_dir, host), planned.files(host), shape.instances)
    check_argv([*rank_argv(shape, run_dir, host, python), ":"] * shape.instances)
