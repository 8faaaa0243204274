"""The registry: every runner by name, the façade dispatching through it, and a new runner
plugged in by one entry."""

from __future__ import annotations

import dataclasses
import io
from typing import Any

import pytest

from smmpi import api
from smmpi.errors import BadInput
from smmpi.runners import registry
from smmpi.runners.plan import Plan
from smmpi.spec import MPIJob

pytestmark = pytest.mark.usefixtures("no_aws_settings")


@dataclasses.dataclass(frozen=True)
class Started:
    """What the test's runner gives back: the job and the keywords it was started with."""

    job: MPIJob
    settings: dict[str, Any]
    name: str = "recorded"
    status: str = "Completed"
    exit_code: int = 0


class Recorder:
    """A runner of the test's, plugged in through the registry."""

    name = "recorder"

    def start(self, job: MPIJob, **settings: Any) -> Started:
        return Started(job, settings)


def test_the_four_runners_are_found_by_name() -> None:
    assert registry.NAMES == ("plan", "local", "sagemaker", "slurm")
    for name in registry.NAMES:
        found = registry.runner(name)
        assert found.name == name
        assert callable(found.start)


@pytest.mark.parametrize("name", ["", "Local", "kubernetes", 3])
def test_an_unknown_runner_is_one_line_naming_the_runners(name: object) -> None:
    with pytest.raises(BadInput) as refused:
        registry.runner(name)  # type: ignore[call-overload]
    assert str(refused.value) == (
        f"invalid runner: {name!r}; allowed: one of plan, local, sagemaker, slurm"
    )


def test_the_facade_dispatches_through_the_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each of api's entries reaches the runner the registry names (here the test's own)."""
    places = {name: f"{__name__}:Recorder" for name in registry.NAMES}
    monkeypatch.setattr(registry, "PLACES", places)
    job = MPIJob("demo", instances=2, ppn=1)
    planned: Any = api.plan(job, job_name="smmpi-demo-x")
    assert planned == Started(job, {"job_name": "smmpi-demo-x"})
    submitted: Any = api.submit(job, wait=False)
    assert submitted.settings == {"wait": False, "echo": None, "stop_on_interrupt": False}
    queued: Any = api.submit_slurm(job, profile="p", partition="debug")
    assert queued.settings == {"profile": "p", "wait": False, "partition": "debug"}


def test_the_plan_runner_gives_the_dry_run() -> None:
    job = MPIJob("demo", instances=3, ppn=2, region="us-west-2")
    planned = registry.runner("plan").start(job, job_name="smmpi-demo-registry")
    assert isinstance(planned, Plan)
    same = api.plan(job, job_name="smmpi-demo-registry")
    assert (planned.job_name, planned.mpirun) == (same.job_name, same.mpirun)
    assert planned.world_size == 6 and planned.mpirun[0] == "mpirun"


def test_the_local_runner_runs_the_program_here(tmp_path: Any) -> None:
    """``smmpi run``'s path through the registry: real mpirun, 2 hosts x 1 rank."""
    out = io.StringIO()
    lines: list[str] = []
    result = api.run_entry(
        "demo", instances=2, ppn=1, out=out, err=io.StringIO(), progress=lines.append
    )
    assert result.exit_code == 0, (out.getvalue(), lines)
    assert "[1,mpirank:0,algo-1]<stdout>:" in out.getvalue()
    assert "2 (2 host(s): algo-1, algo-2)" in out.getvalue()
    assert lines[-1].startswith("smmpi: 2 ranks on 2 emulated host(s) completed")
