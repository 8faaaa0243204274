"""Bad values for the options of ``run`` and ``submit``: one line naming the field, exit 2, and
nothing created, in every mode that takes them (``run``, ``submit --dry-run``, ``submit
--local``, ``submit``)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.helpers import (
    ROLE,
    MotoServer,
    base_env,
    processes_left,
    run_checked,
    s3_state,
    smmpi,
    training_jobs,
    write,
)

LONG = "e" * 10000
SHAPE = ["-N", "1", "-n", "2"]
#: Each mode's command line; ENTRY stands for the entry point.
MODES = {
    "run": ["run", "ENTRY", *SHAPE],
    "dry-run": ["submit", "ENTRY", *SHAPE, "--dry-run"],
    "local": ["submit", "ENTRY", *SHAPE, "--local"],
    "submit": ["submit", "ENTRY", *SHAPE, "--role", ROLE, "--no-wait"],
}
ALL = tuple(MODES)
SUBMITS = ("dry-run", "local", "submit")
LOCAL = ("run", "local")
#: The system's limits on a path, named in the line.
PATH_RULE = "a path of at most 4095 bytes, each name in it at most 255 bytes"

#: (id, entry, flags, field, the line's rule or "", modes). ``SCRIPT`` is a script of the test's.
CASES: list[tuple[str, str, list[str], str, str, tuple[str, ...]]] = [
    ("long-file-name", f"/tmp/{LONG}.py", [], "ENTRY", PATH_RULE, ALL),
    ("long-name", LONG, [], "ENTRY", PATH_RULE, ALL),
    ("long-source-dir", "SCRIPT", ["--source-dir", f"/tmp/{LONG}"], "source_dir", PATH_RULE, ALL),
    ("x-alone", "demo", ["--mpi-options", "-x"], "mpi_options", "-x takes 1 value", ALL),
    ("mca-one-word", "demo", ["--mpi-options", "-mca btl"], "mpi_options", "-mca takes 2", ALL),
    ("bind-to-alone", "demo", ["--mpi-options", "--bind-to"], "mpi_options", "--bind-to", ALL),
    ("x-then-option", "demo", ["--mpi-options", "-x --bind-to none"], "mpi_options", "-x ", ALL),
    ("nccl-alone", "demo", ["--mpi-options", "--NCCL_DEBUG"], "mpi_options", "NCCL_DEBUG", ALL),
    ("framework-empty", "demo", ["--framework", ""], "framework", "tensorflow or pytorch", ALL),
    ("instance-type-empty", "demo", ["--instance-type", ""], "instance_type", "ml.c5", ALL),
    ("version-empty", "demo", ["--framework-version", ""], "framework_version", "", ALL),
    ("source-dir-empty", "SCRIPT", ["--source-dir", ""], "source_dir", "", ALL),
    *(
        (f"timeout-{value}", "demo", ["--timeout", value], "--timeout", "from 1 to 2419200", LOCAL)
        for value in ("1e-9", "1e30", "nan", "0.5")  # tests/spec: every value, every way in
    ),
    *(
        (f"max-run-{value}", "demo", ["--max-run", value], "max_run", "from 1 to 2419200", SUBMITS)
        for value in ("0", "1e30", "2419201", "9" * 400, "")
    ),
    ("max-wait", "demo", ["--spot", "--max-wait", "2419201"], "max_wait", "2419200", SUBMITS),
    # --metric NAME=REGEX: SageMaker's MetricDefinitions limits (botocore's model), Python's re
    ("metric-no-equals", "demo", ["--metric", "loss"], "metric", "NAME=REGEX", ALL),
    ("metric-no-name", "demo", ["--metric", "=loss=([0-9.]+)"], "metric", "NAME=REGEX", ALL),
    ("metric-bad-regex", "demo", ["--metric", "loss=loss=([0-9.]+"], "metric loss",
     "a regular expression (Python's re: missing ), unterminated subpattern", ALL),
    ("metric-no-regex", "demo", ["--metric", "loss="], "metric loss", "1-500 characters", ALL),
    ("metric-long-regex", "demo", ["--metric", "loss=" + "x" * 501], "metric loss",
     "a regex of 1-500 characters", ALL),
    ("metric-long-name", "demo", ["--metric", "n" * 256 + "=x"], "metric",
     "a name of 1-255 characters", ALL),
    ("metric-41", "demo", [a for i in range(41) for a in ("--metric", f"m{i}=m{i}=(.+)")],
     "metric", "'41 definitions'; allowed: at most 40", ALL),
    ("metric-twice", "demo", ["--metric", "a=x=(.+)", "--metric", "a=y=(.+)"], "metric",
     "each metric name once", ALL),
    *(
        (f"keep-warm-{value}", "demo", ["--keep-warm", value], "--keep-warm", "0 to 3600", ("run",))
        for value in ("-1", "3601", "1.5", "ten", "", "9" * 400)
    ),
]  # fmt: skip


def _argv(mode: str, entry: str, flags: list[str], script: Path) -> list[str]:
    entry = str(script) if entry == "SCRIPT" else entry
    return [entry if a == "ENTRY" else a for a in MODES[mode]] + flags


def _refused(done: subprocess.CompletedProcess[str], field: str, rule: str) -> None:
    assert done.returncode == 2, (done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"smmpi: invalid {field}: "), lines
    assert rule in lines[0], lines
    assert done.stdout == ""


def _cases(modes: tuple[str, ...]) -> list[object]:
    return [
        pytest.param(mode, entry, flags, field, rule, id=f"{mode}-{name}")
        for name, entry, flags, field, rule, allowed in CASES
        for mode in modes
        if mode in allowed
    ]


def _here(tmp_path: Path) -> tuple[dict[str, str], Path]:
    """An environment whose runs and local jobs would be made under ``tmp_path``."""
    (tmp_path / "tmp").mkdir()
    (tmp_path / "code").mkdir()
    script = write(tmp_path / "code" / "train.py", "print('trained')\n")
    env = {
        **base_env(tmp_path),
        "TMPDIR": str(tmp_path / "tmp"),
        "SMMPI_LOCAL_JOBS": str(tmp_path / "jobs"),
    }
    return env, script


def _nothing_made(tmp_path: Path) -> None:
    assert not any((tmp_path / "tmp").glob("smmpi-*"))  # no run folder
    assert not (tmp_path / "jobs").exists()  # no local job
    assert not (tmp_path / "home" / ".smmpi" / "warm").exists()  # no warm instances
    assert processes_left(str(tmp_path)) == []


@pytest.mark.parametrize(("mode", "entry", "flags", "field", "rule"), _cases(("run", "dry-run")))
def test_a_bad_value_is_one_line_before_anything_runs(
    tmp_path: Path, mode: str, entry: str, flags: list[str], field: str, rule: str
) -> None:
    env, script = _here(tmp_path)
    _refused(smmpi(_argv(mode, entry, flags, script), env, cwd=tmp_path), field, rule)
    _nothing_made(tmp_path)


@pytest.mark.parametrize("value", ["-1", "3601", "ten"])
def test_a_bad_keep_warm_in_the_environment_is_refused_before_anything_runs(
    tmp_path: Path, value: str
) -> None:
    env, _ = _here(tmp_path)
    env["SMMPI_KEEP_WARM"] = value
    done = smmpi(["run", "demo", *SHAPE], env, cwd=tmp_path)
    _refused(done, "SMMPI_KEEP_WARM", "whole seconds from 0 to 3600")
    _nothing_made(tmp_path)


@pytest.mark.parametrize(("mode", "entry", "flags", "field", "rule"), _cases(("local",)))
def test_a_bad_value_makes_no_local_job(
    tmp_path: Path, mode: str, entry: str, flags: list[str], field: str, rule: str
) -> None:
    env, script = _here(tmp_path)
    _refused(smmpi(_argv(mode, entry, flags, script), env, cwd=tmp_path), field, rule)
    _nothing_made(tmp_path)


@pytest.mark.aws
@pytest.mark.parametrize(("mode", "entry", "flags", "field", "rule"), _cases(("submit",)))
def test_a_bad_value_submits_nothing(
    moto_server: MotoServer,
    aws: dict[str, str],
    tmp_path: Path,
    mode: str,
    entry: str,
    flags: list[str],
    field: str,
    rule: str,
) -> None:
    (tmp_path / "code").mkdir()
    script = write(tmp_path / "code" / "train.py", "print('trained')\n")
    _refused(run_checked(_argv(mode, entry, flags, script), aws), field, rule)
    assert training_jobs(moto_server) == []
    assert s3_state(moto_server) == {}


def _toolkit_venvs(tmp_path: Path) -> dict[str, Path]:
    """Folders that are not a venv holding sagemaker-training."""
    target = tmp_path / "pip-target"  # the toolkit's package, but no bin/python
    (target / "sagemaker_training").mkdir(parents=True)
    return {"missing": tmp_path / "missing", "no-python": target}


@pytest.mark.parametrize("kind", ["missing", "no-python"])
@pytest.mark.parametrize("framework", ["tensorflow", "pytorch"])
@pytest.mark.parametrize("mode", ["run", "local"])
def test_a_toolkit_venv_that_is_not_one_is_refused_for_either_image(
    tmp_path: Path, kind: str, framework: str, mode: str
) -> None:
    env, script = _here(tmp_path)
    venv = _toolkit_venvs(tmp_path)[kind]
    env = {**env, "SMMPI_TOOLKIT_VENV": str(venv)}
    flags = ["--exact", "--framework", framework]
    done = smmpi(_argv(mode, "demo", flags, script), env, cwd=tmp_path)
    _refused(done, "SMMPI_TOOLKIT_VENV", f"'{venv}'; allowed: a venv with sagemaker-training")
    _nothing_made(tmp_path)
    assert not (tmp_path / "home" / ".smmpi" / "toolkits").exists()  # nothing built
