"""The instance type is checked once, with one message, whoever asks: the CLI's
``--instance-type`` (``run`` and ``submit``) and a job built in Python."""

from __future__ import annotations

from pathlib import Path

import pytest

from smmpi.api import run_entry
from smmpi.errors import BadInput
from smmpi.spec import MPIJob
from smmpi.spec.instance_type import (
    DEFAULT_INSTANCE_TYPE,
    INSTANCE_TYPE_RULE,
    check_instance_type,
    cores_note,
)
from tests.helpers import base_env, smmpi

#: A malformed type (no ``ml.``) and one SageMaker does not train on (with close ones).
BAD = ("c5.2xlarge", "ml.c5.3xlarge")


def _cli_line(tmp_path: Path, argv: list[str]) -> str:
    done = smmpi(argv, base_env(tmp_path), cwd=tmp_path)
    assert done.returncode == 2, (done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and done.stdout == "", (done.stdout, lines)
    return lines[0]


@pytest.mark.parametrize("value", BAD)
def test_run_submit_and_python_refuse_a_type_with_the_same_line(tmp_path: Path, value: str) -> None:
    shape = ["-N", "1", "-n", "1", "--instance-type", value]
    run = _cli_line(tmp_path, ["run", "demo", *shape])
    dry = _cli_line(tmp_path, ["submit", "demo", *shape, "--dry-run"])
    with pytest.raises(BadInput) as job:
        MPIJob("demo", instance_type=value)
    with pytest.raises(BadInput) as entry:
        run_entry("demo", instance_type=value)
    assert run == dry == f"smmpi: {job.value}" == f"smmpi: {entry.value}"
    assert run.startswith(f"smmpi: invalid instance_type: {value!r}; allowed: {INSTANCE_TYPE_RULE}")


def test_an_unknown_type_names_the_closest_known_ones() -> None:
    with pytest.raises(BadInput, match=r"\(closest: ml\.c5\.\w+") as refused:
        check_instance_type("ml.c5.3xlarge")
    assert refused.value.field == "instance_type"
    for value in (None, 5, "", "ml.", "c5.2xlarge"):
        with pytest.raises(BadInput, match=r"^invalid instance_type: .*; allowed: a SageMaker"):
            check_instance_type(value)


def test_a_known_type_passes_and_too_many_processes_is_a_note() -> None:
    assert check_instance_type(DEFAULT_INSTANCE_TYPE) == DEFAULT_INSTANCE_TYPE
    assert check_instance_type("ml.p4d.24xlarge") == "ml.p4d.24xlarge"
    assert cores_note(DEFAULT_INSTANCE_TYPE, 8) is None
    note = cores_note(DEFAULT_INSTANCE_TYPE, 9)
    assert note == "ppn 9 exceeds the 8 vCPUs of ml.c5.2xlarge: processes will share cores"
