"""The one local preflight: every check of a request and this machine before anything exists."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path
from typing import Any

import pytest

from smmpi.api import options
from smmpi.archives import pack
from smmpi.catalog import resolve
from smmpi.errors import BadInput
from smmpi.runners.local import exact, toolkits
from smmpi.runners.local.containers import ModelLine, RealToolkit, choose
from smmpi.runners.local.job import run
from smmpi.runners.local.preflight import check
from smmpi.toolkit.driver_world import REMOTE_FUNCTION
from smmpi.toolkit.offline import request_from_program
from smmpi.toolkit.plan import plan


def _job(name: str = "smmpi-run-demo") -> tuple[dict[str, Any], bytes]:
    program = resolve("demo")
    request = request_from_program(program, 2, 1)
    request["TrainingJobName"] = name
    return request, pack(program.files(), "ENTRY")


def _with(source: bytes, name: str, data: bytes) -> bytes:
    """``source`` with one more file."""
    out = io.BytesIO()
    with (
        tarfile.open(fileobj=io.BytesIO(source)) as old,
        tarfile.open(fileobj=out, mode="w:gz") as new,
    ):
        for member in old.getmembers():
            new.addfile(member, old.extractfile(member))
        info = tarfile.TarInfo(name)
        info.size = len(data)
        new.addfile(info, io.BytesIO(data))
    return out.getvalue()


def test_a_kept_jobs_name_is_checked_and_a_throwaway_runs_is_not(local_env: dict[str, str]) -> None:
    request, source = _job("not a job name!")
    planned = plan(request)
    with pytest.raises(BadInput, match=r"^invalid job name: 'not a job name!'"):
        check(planned, source, options(), ModelLine(planned))
    chosen = options(throwaway=True)
    assert check(planned, source, chosen, ModelLine(planned)).mode in ("hosts", "processes")


def test_requirements_are_read_for_a_kept_job_and_left_to_the_real_toolkit(
    local_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    built: list[str] = []  # the real toolkit's environment, built once after every check
    monkeypatch.setattr(exact, "prepare", lambda image, progress: built.append(image))
    request, source = _job()
    source = _with(source, "requirements.txt", b"six==1.16.0\n")
    planned = plan(request)
    assert check(planned, source, options(), ModelLine(planned)).wanted == ["six==1.16.0"]
    assert check(planned, source, options(throwaway=True), ModelLine(planned)).wanted is None
    # the real toolkit pip-installs it itself, as in the container (no --exact check here)
    assert check(planned, source, options(), RealToolkit(())).wanted is None
    assert built == [planned.shape.image]


def test_exact_in_processes_mode_is_refused_before_the_jobs_folder_exists(
    local_env: dict[str, str],
) -> None:
    request, source = _job("smmpi-preflight-exact")
    with pytest.raises(BadInput, match=r"^invalid --exact: True; allowed: isolated hosts only"):
        run(request, source, options(exact=True, isolation="processes"))
    assert not (Path(local_env["SMMPI_LOCAL_JOBS"]) / "smmpi-preflight-exact").exists()


def test_a_non_python_entry_is_refused_in_one_line(local_env: dict[str, str]) -> None:
    request, source = _job()
    request["HyperParameters"]["sagemaker_program"] = '"train.sh"'
    with pytest.raises(BadInput, match=r"^invalid HyperParameters.sagemaker_program: 'train.sh'"):
        check(plan(request), source, options(), ModelLine(plan(request)))


def test_exacts_toolkit_is_looked_up_once_when_its_container_is_chosen(
    local_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(exact.TOOLKIT_VENV, "none")  # (exact mode's model line through sshd)
    request, source = _job("smmpi-preflight-toolkit")
    planned = plan(request)
    asked: list[str] = []
    real = toolkits.sources

    def counted(image: str) -> tuple[Path, ...] | None:
        asked.append(image)
        return real(image)

    monkeypatch.setattr(toolkits, "sources", counted)
    chosen = options(exact=True, isolation="hosts")
    container = choose(planned, chosen)
    assert container == ModelLine(planned, sshd=True) and len(asked) == 1
    assert check(planned, source, chosen, container).mode == "hosts"
    assert len(asked) == 1  # not again in the preflight


def test_remote_function_request_runs_under_serve_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SMMPI_LOCAL_JOBS", str(tmp_path / "jobs"))
    request: dict[str, Any] = {
        "TrainingJobName": "rf-job",
        "AlgorithmSpecification": {"TrainingImage": "img", "ContainerEntrypoint": ["/bin/bash"]},
        "ResourceConfig": {"InstanceCount": 2, "InstanceType": "ml.c5.2xlarge"},
        "InputDataConfig": [{"ChannelName": REMOTE_FUNCTION}],
    }
    with pytest.raises(BadInput) as refused:
        run(request, b"", options())
    assert str(refused.value) == (
        'invalid request: "@remote\'s job script"; allowed: a run under smmpi serve (its ranks '
        "reach S3 through the job's own endpoint and key, which serve gives them)"
    )
    assert not (tmp_path / "jobs").exists()
