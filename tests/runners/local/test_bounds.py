"""The largest world a local run emulates: refused in one line from its plan, before anything."""

from __future__ import annotations

from pathlib import Path

import pytest

from smmpi.catalog import resolve
from smmpi.errors import BadInput
from smmpi.runners.local import bounds
from smmpi.runners.local.bounds import check_bounds, check_world
from smmpi.spec.world import MAX_INSTANCES, MAX_PPN
from smmpi.toolkit.offline import request_from_program
from smmpi.toolkit.plan import plan


def test_a_world_beyond_the_local_bounds_is_refused_in_one_line() -> None:
    check_world(MAX_INSTANCES, 1)
    with pytest.raises(BadInput, match=rf"^invalid instances: {MAX_INSTANCES + 1}; allowed: "):
        check_world(MAX_INSTANCES + 1, 1)
    with pytest.raises(BadInput, match=rf"^invalid ppn: {MAX_PPN + 1}; allowed: "):
        check_world(1, MAX_PPN + 1)
    ranks = bounds.MAX_RANKS // 4 + 1
    with pytest.raises(BadInput, match=rf"^invalid ranks \(instances x ppn\): {ranks * 4}; "):
        check_world(ranks, 4)


def test_a_variable_longer_than_linux_takes_is_refused(tmp_path: Path) -> None:
    request = request_from_program(resolve("demo"), 2, 1)
    request["HyperParameters"]["big"] = '"' + "x" * bounds.MAX_VARIABLE_BYTES + '"'
    with pytest.raises(BadInput, match=r"^invalid environment variable SM_"):
        check_bounds(plan(request), tmp_path / "hosts")
    assert not (tmp_path / "hosts").exists()


def test_host_files_and_a_command_line_beyond_their_bounds_are_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    planned = plan(request_from_program(resolve("demo"), 3, 2))
    check_bounds(planned, tmp_path)
    monkeypatch.setattr(bounds, "MAX_ARGV_BYTES", 64)
    with pytest.raises(BadInput, match=r"^invalid mpirun command line: '\d+ bytes'; "):
        check_bounds(planned, tmp_path)
    monkeypatch.setattr(bounds, "MAX_TREE_BYTES", 1024)  # (its files and variables, x 3 hosts)
    with pytest.raises(
        BadInput, match=r"^invalid host trees: '\d+ bytes of configuration over 3 hosts'; "
    ):
        check_bounds(planned, tmp_path)
