"""The container is a value, chosen once: what each instance runs, and what smmpi says of it."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from smmpi.api import options
from smmpi.catalog import resolve
from smmpi.runners.local import exact
from smmpi.runners.local.containers import Entrypoint, ModelLine, RealToolkit, choose
from smmpi.toolkit.mpirun import container_mpirun
from smmpi.toolkit.offline import request_from_program
from smmpi.toolkit.plan import ContainerPlan, plan
from smmpi.toolkit.shape import JobShape

ROOT = Path(__file__).resolve().parents[3]
IMAGE = "pytorch-training:2.8.0-cpu-py312"


def test_the_model_is_the_default_and_starts_every_rank_under_its_watcher() -> None:
    planned = plan(_request(IMAGE), ("--x",))
    chosen = choose(planned, options(args=("--x",)))
    assert chosen == ModelLine(planned)
    assert chosen.own_line and chosen.forwards
    assert chosen.first_line(_shape()) is None and not chosen.stages_code(_shape())


def test_the_models_line_is_the_requests_own_with_smmpi_runs_arguments() -> None:
    request = _request()
    line = plan(request, ["--x", "1"]).line
    assert line == [*container_mpirun(request), "--x", "1"]
    assert line[line.index("mpi4py") + 1 :] == [
        "demo.py",
        "--model_dir",
        "/opt/ml/model",
        "--x",
        "1",
    ]


def test_exact_without_the_toolkit_is_the_models_line_through_sshd(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(exact.TOOLKIT_VENV, "none")
    planned = plan(_request(IMAGE))
    chosen = choose(planned, options(exact=True))
    assert chosen == ModelLine(planned, sshd=True)
    assert not chosen.own_line and chosen.forwards
    assert chosen.first_line(_shape()) == exact.first_line(IMAGE)


def test_exact_with_the_toolkit_is_the_real_toolkit_which_fetches_the_code(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    venv = os.environ.get("SMMPI_TOOLKIT_VENV") or str(ROOT / ".venv-toolkit")
    monkeypatch.setenv(exact.TOOLKIT_VENV, venv)
    chosen = choose(plan(_request(IMAGE)), options(exact=True))
    assert isinstance(chosen, RealToolkit)
    assert chosen.sources == exact.toolkit_sources(IMAGE)
    assert chosen.stages_code(_shape()) and not chosen.own_line


def test_a_requests_own_entrypoint_says_its_line_and_forwards_nothing() -> None:
    driver = Entrypoint(ContainerPlan({}, _shape(), ("sh",), entrypoint=True), {}, "smmpi: MT")
    assert driver.first_line(_shape()) == "smmpi: MT"
    assert not (driver.own_line or driver.forwards or driver.stages_code(_shape()))


def _request(image: str = "") -> dict[str, Any]:
    request = request_from_program(resolve("demo"), 1, 1)
    if image:
        request["AlgorithmSpecification"]["TrainingImage"] = image
    return request


def _shape() -> JobShape:
    return plan(_request()).shape
