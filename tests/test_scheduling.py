"""`make test`'s side-by-side pass (``-n 4 --dist loadgroup``): the modules that share a costly
fixture run as one unit of work each, so the fixture is made once, not in every worker."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

from tests import conftest
from tests.conftest import SHARED_FIXTURE, _SharedFixtureGroups

ORACLE = "tests/oracle/test_tags.py::test_tags_are_rewritten_as_the_toolkit_does[0]"
ORACLE_TOO = "tests/oracle/test_mpirun.py::test_mpirun_argv_is_the_toolkits[tf-1x1-cpu]"
SUITE = "tests/compat/test_mpi4py_suite.py::test_mpi4py_suite_matches_plain_mpirun_per_rank[hosts]"
DEMO = "tests/compat/test_mpi4py_demos.py::test_demo_prints_what_plain_mpirun_prints[x]"
POOL = "tests/compat/test_mpipool.py::test_mpipool_readme_example[hosts]"


def _config(dist: str) -> Any:
    """What the scheduler and the hook read of pytest's configuration."""
    values = {"dist": dist, "tx": ["4*popen"], "numprocesses": 4}
    return SimpleNamespace(option=SimpleNamespace(**values), getvalue=values.get)


def test_the_modules_of_one_shared_fixture_are_one_unit_of_work() -> None:
    groups = _SharedFixtureGroups(_config("loadgroup"))
    assert groups._split_scope(ORACLE) == groups._split_scope(ORACLE_TOO) == "oracle-differential"
    assert groups._split_scope(SUITE) == "mpi4py-suite"
    assert groups._split_scope(DEMO) == groups._split_scope(POOL) == "mpi4py-demos"


def test_every_other_test_is_a_unit_of_its_own() -> None:
    groups = _SharedFixtureGroups(_config("loadgroup"))
    one, two = "tests/exact/test_sshd.py::test_a", "tests/exact/test_sshd.py::test_b"
    assert (groups._split_scope(one), groups._split_scope(two)) == (one, two)


def test_the_groups_apply_under_loadgroup_only() -> None:
    made = conftest.pytest_xdist_make_scheduler(_config("loadgroup"), None)
    assert isinstance(made, _SharedFixtureGroups)
    assert conftest.pytest_xdist_make_scheduler(_config("load"), None) is None


def test_every_module_named_exists() -> None:
    tests = Path(conftest.__file__).parent
    assert [m for m in SHARED_FIXTURE if not (tests / m).is_file()] == []
