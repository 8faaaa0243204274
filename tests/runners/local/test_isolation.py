"""Choosing the local mode, and what isolated hosts add to the instances' environment."""

from __future__ import annotations

import os

import pytest

from smmpi.errors import BadInput
from smmpi.runners.local.isolation import sharing_cores
from smmpi.runners.local.modes import HOSTS_MAX, choose

YIELD = "OMPI_MCA_mpi_yield_when_idle"


def test_ranks_yield_only_when_they_fill_the_cores() -> None:
    cores = len(os.sched_getaffinity(0))
    assert sharing_cores(cores - 1, {}) == {}  # a core is left for orted and smmpi
    assert sharing_cores(cores, {}) == {YIELD: "1"}
    assert sharing_cores(cores + 1, {}) == {YIELD: "1"}
    assert sharing_cores(cores + 1, {YIELD: "0"}) == {}  # the user's own setting stands


def test_above_the_isolated_limit_auto_runs_processes_and_hosts_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("SMMPI_ISOLATION", raising=False)
    assert choose("auto", HOSTS_MAX + 1) == (
        "processes",
        f"isolated hosts run at most {HOSTS_MAX} instances",
    )
    assert choose("processes", HOSTS_MAX + 1) == ("processes", "asked for")
    with pytest.raises(BadInput, match=f"auto or processes above {HOSTS_MAX} instances"):
        choose("hosts", HOSTS_MAX + 1)
    assert choose("hosts", HOSTS_MAX) == ("hosts", None)  # as root here: namespaces work
