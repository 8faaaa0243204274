"""Every variable of every rank, per host: smmpi's model against the real toolkit's records."""

from __future__ import annotations

from typing import Any

import pytest

from smmpi.toolkit.container import NOT_EMULATED
from tests.oracle import matrix, smmpi_side
from tests.oracle.compare import Substitutions, env_diff
from tests.oracle.ranks import rank_envs


def _subs(built: matrix.Built) -> Substitutions:
    return Substitutions(roots=list(built.roots.values()))


@pytest.mark.parametrize("case", [c.id for c in matrix.CASES])
def test_rank_environment_is_the_toolkits(differential: dict[str, Any], case: str) -> None:
    """smmpi.toolkit.container.rank_env equals the container's, host by host, name by name.

    Not compared: LD_PRELOAD, PATH and LD_LIBRARY_PATH, which smmpi leaves to
    this machine (see smmpi.toolkit.container).
    """
    built: matrix.Built = differential["built"][case]
    toolkit = rank_envs(differential["answer"]["cases"][case])
    problems = []
    for host, root in built.roots.items():
        ours = smmpi_side.rank_env(built.request, root, host, built.source)
        theirs = {k: v for k, v in toolkit[host].items() if k not in NOT_EMULATED}
        problems += [f"{host} {line}" for line in env_diff(theirs, ours, _subs(built))]
    assert not problems, "\n".join(problems)


def test_a_changed_variable_is_named(differential: dict[str, Any]) -> None:
    built: matrix.Built = differential["built"]["pt-3x1-cpu"]
    toolkit = rank_envs(differential["answer"]["cases"]["pt-3x1-cpu"])["algo-2"]
    ours = smmpi_side.rank_env(built.request, built.roots["algo-2"], "algo-2", built.source)
    ours["MASTER_PORT"] = "29500"
    assert env_diff(toolkit, ours, _subs(built), names=["MASTER_PORT"]) == [
        "MASTER_PORT: toolkit '7777' != smmpi '29500'"
    ]
