"""How the outcomes of mpi4py's suite under smmpi differ from plain mpirun's, rank by rank."""

from __future__ import annotations

import re

#: Where SageMaker's MPI_ERR_WIN shows (the ``win-thread-multiple`` pitfall).
WIN_MODULES = ("test_win", "test_util_sync")

Outcomes = dict[int, dict[str, str]]  # rank -> test id -> outcome


def module(test_id: str) -> str:
    return test_id.split(".")[0]


Difference = tuple[int, str, str | None, str | None]  # rank, test id, plain's, smmpi's


def select(other: list[Difference]) -> tuple[str, ...]:
    """main.py's arguments that run only the tests in ``other``: their modules (``-i``) and
    their names (``-k``, a substring of ``module.Class.test``)."""
    tests = sorted({t for _, t, _, _ in other})
    modules = "|".join(sorted({re.escape(module(t)) for t in tests}))
    return ("-i", rf"^({modules})\.py$", *(a for t in tests for a in ("-k", t)))


def differences(
    plain: Outcomes, here: Outcomes, modules: set[str], cut: frozenset[int]
) -> tuple[dict[int, set[str]], list[Difference]]:
    """Per rank, the tests of ``modules`` that pass under plain mpirun and meet SageMaker's
    MPI_ERR_WIN here (or, on a rank cut short by that failure, were never reached); and every
    other difference: a test of ``modules`` with another outcome, or one that ran here only."""
    allowed: dict[int, set[str]] = {}
    other: list[Difference] = []
    for rank in plain:
        expected = {t: o for t, o in plain[rank].items() if module(t) in modules}
        found = here.get(rank, {})
        unlike = {
            t: (expected.get(t), found.get(t))
            for t in expected.keys() | found.keys()
            if expected.get(t) != found.get(t)
        }
        allowed[rank] = {
            t for t, d in unlike.items() if d == ("ok", "ERROR") and module(t) in WIN_MODULES
        }
        unreached = {
            t
            for t, d in unlike.items()
            if rank in cut and d[1] is None and module(t) in WIN_MODULES
        }
        other += sorted(
            (rank, t, *d) for t, d in unlike.items() if t not in allowed[rank] | unreached
        )
    return allowed, other
