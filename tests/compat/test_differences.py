"""The comparison of mpi4py's suite under smmpi with plain mpirun (tests/compat/differences.py)."""

from __future__ import annotations

import re

from tests.compat.differences import differences, select

WIN = "test_win.TestWinCreate.testPut"
POOL = "test_util_pool.TestThreadPool.test_terminate"


def test_the_same_outcomes_are_no_difference() -> None:
    plain = {0: {POOL: "ok", WIN: "ok"}, 1: {POOL: "ok", WIN: "ok"}}
    assert differences(plain, plain, {"test_util_pool", "test_win"}, frozenset()) == (
        {0: set(), 1: set()},
        [],
    )


def test_sagemakers_mpi_err_win_is_allowed_and_nothing_else() -> None:
    plain = {0: {POOL: "ok", WIN: "ok"}, 1: {POOL: "ok", WIN: "ok"}}
    here = {0: {POOL: "ok", WIN: "ERROR"}, 1: {POOL: "FAIL", WIN: "FAIL"}}
    allowed, other = differences(plain, here, {"test_util_pool", "test_win"}, frozenset())
    assert allowed == {0: {WIN}, 1: set()}
    assert other == [(1, POOL, "ok", "FAIL"), (1, WIN, "ok", "FAIL")]


def test_a_cut_rank_may_miss_only_the_one_sided_tests() -> None:
    plain = {0: {POOL: "ok", WIN: "ok"}, 1: {POOL: "ok", WIN: "ok"}}
    here = {0: {POOL: "ok", WIN: "ERROR"}, 1: {POOL: "ok"}}
    modules = {"test_util_pool", "test_win"}
    assert differences(plain, here, modules, frozenset({1}))[1] == []
    assert differences(plain, here, modules, frozenset())[1] == [(1, WIN, "ok", None)]
    assert differences(plain, {0: here[0], 1: {}}, modules, frozenset({1}))[1] == [
        (1, POOL, "ok", None)
    ]


def test_a_test_that_ran_only_under_smmpi_is_a_difference() -> None:
    plain = {0: {POOL: "ok"}}
    here = {0: {POOL: "ok", "test_extra.T.t": "ok"}}
    assert differences(plain, here, {"test_util_pool"}, frozenset())[1] == [
        (0, "test_extra.T.t", None, "ok")
    ]


def test_the_rerun_selects_the_differing_tests_and_their_modules_only() -> None:
    argv = select([(2, POOL, "ok", "FAIL"), (0, POOL, "ok", "FAIL"), (1, WIN, "ok", None)])
    assert argv == ("-i", r"^(test_util_pool|test_win)\.py$", "-k", POOL, "-k", WIN)
    pattern = re.compile(argv[1])
    assert pattern.match("test_win.py") and not pattern.match("test_win_x.py")
