"""CPU seconds per test, for finding what makes the suite long on a machine of few cores.

``python -m pytest -p tests.cpu_report ...`` in the repository (with or without
pytest-xdist) adds to each test's report the user plus system CPU time of the processes the
test waited for (``RUSAGE_CHILDREN``: smmpi, mpirun and every rank, each counted once its
parent waited for it) and of the test's own process, and prints the largest at the end.
``SMMPI_CPU_REPORT=FILE`` also writes every test's figures to FILE as JSON lines.
"""

from __future__ import annotations

import json
import os
import resource
from collections.abc import Generator

import pytest

_START = pytest.StashKey[float]()
_FIGURES: list[tuple[float, str]] = []  # (CPU seconds, test), as the reports arrive


def _cpu() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    waited = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + waited.ru_utime + waited.ru_stime


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    item.stash[_START] = _cpu()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item,
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if report.when == "teardown" and _START in item.stash:
        spent = round(_cpu() - item.stash[_START], 3)
        report.user_properties.append(("cpu_s", spent))
        path = os.environ.get("SMMPI_CPU_REPORT")
        if path:
            with open(path, "a", encoding="utf-8") as out:
                out.write(json.dumps({"test": item.nodeid, "cpu_s": spent}) + "\n")
    return report


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Where the figures arrive (in pytest-xdist's controller too, from its workers)."""
    cpu = dict(report.user_properties).get("cpu_s")
    if report.when == "teardown" and isinstance(cpu, float):
        _FIGURES.append((cpu, report.nodeid))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if _FIGURES:
        total = sum(c for c, _ in _FIGURES)
        terminalreporter.write_sep("=", f"CPU seconds per test ({total:.1f} s in all)")
        for cpu, nodeid in sorted(_FIGURES, reverse=True)[:20]:
            terminalreporter.write_line(f"{cpu:9.2f}s {nodeid}")
