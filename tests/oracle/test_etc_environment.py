"""A worker's /etc/environment: the text smmpi lays out for each instance, against what the
toolkit's ``mpi._write_env_vars_to_file`` writes on that instance's own tree."""

from __future__ import annotations

from typing import Any

import pytest

from tests.oracle import matrix
from tests.oracle.compare import Substitutions, env_diff
from tests.oracle.ranks import parse_etc_environment

#: The container's own, which smmpi leaves to this machine (docs/TOOLKIT.md).
MACHINE = ("PATH", "LD_LIBRARY_PATH")


@pytest.mark.parametrize("case", [c.id for c in matrix.CASES])
def test_each_worker_gets_its_toolkits_etc_environment(
    differential: dict[str, Any], case: str
) -> None:
    built: matrix.Built = differential["built"][case]
    hosts = differential["answer"]["cases"][case]
    subs = Substitutions(roots=list(built.roots.values()))
    problems = []
    for host in built.roots:
        laid_out = built.run_dir / host / "etc" / "environment"
        if host == "algo-1":  # the master writes none
            assert "etc_environment" not in hosts[host]
            assert not laid_out.exists()
            continue
        assert hosts[host]["etc_environment_mode"] == "a"
        theirs = parse_etc_environment(hosts[host]["etc_environment"])
        theirs = {k: v for k, v in theirs.items() if k not in MACHINE}
        ours = parse_etc_environment(laid_out.read_text(encoding="utf-8"))
        assert ours["CURRENT_HOST"] == host and "SM_TRAINING_ENV" in ours
        problems += [f"{host} {line}" for line in env_diff(theirs, ours, subs)]
    assert not problems, "\n".join(problems)
