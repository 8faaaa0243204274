"""A TensorFlow job's hyperparameter that the images' shell fails on: refused before anything.

The TensorFlow images' toolkit (sagemaker-training 4.8.3) runs its mpirun line through
/bin/sh with every hyperparameter unquoted; ``--hyperparameter msg="it's"`` fails there
(``/bin/sh: 1: Syntax error: Unterminated quoted string``, exit 2). The characters smmpi
refuses are held to the real toolkit's own shell (``process.create``), and the PyTorch images'
5.1.4, which runs no shell, takes every one of them.
"""

from __future__ import annotations

import json
import string
import subprocess
from pathlib import Path

import pytest

from smmpi.spec.shell import breaking
from tests.exact.test_toolkit import TF, VENV
from tests.faults.test_input_faults import ROLE, nothing_created, refused
from tests.helpers import MotoServer, smmpi

#: Runs the toolkit's own ``process.create`` on a printf line per value (argv[1]: JSON list);
#: prints, per value, its exit code and whether the value's own marker reached the output.
SHELL = r"""
import contextlib, io, json, os, sys
from sagemaker_training import process
result = []
for i, value in enumerate(json.loads(sys.argv[1])):
    cmd = ["printf", "'%s\\n'", f"MARK{i}", "--msg", value, "--model_dir", "/opt/ml/model"]
    seen = io.StringIO()
    with contextlib.redirect_stdout(seen):
        rc, _, _ = process.create(cmd, [], 1, cwd=os.getcwd(), capture_error=True)
    result.append([rc, f"MARK{i}" in seen.getvalue()])
print(json.dumps(result))
"""
#: Every character a shell may act on, in the middle of a value, as the line has it.
VALUES = [f"a{c}b" for c in string.punctuation + " \t\n"] + ["a${b", "a${b}c", "it's"]


def _toolkit_shell(tmp_path: Path, pythonpath: str) -> list[list[object]]:
    # Imported where there is no /opt/ml, the toolkit makes ~/sagemaker_local/jobs/TIME/opt/ml:
    # a HOME of the test's own keeps that folder in the test's tmp_path
    home = tmp_path / f"home{len(pythonpath)}"
    done = subprocess.run(
        [f"{VENV}/bin/python", "-c", SHELL, json.dumps(VALUES)],
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": pythonpath, "HOME": str(home)},
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert list(home.glob("sagemaker_local/jobs/*/opt/ml")), "the toolkit's folder is not there"
    return json.loads(done.stdout.splitlines()[-1])  # type: ignore[no-any-return]


def test_the_refused_characters_are_those_the_tensorflow_toolkits_shell_fails_on(
    tmp_path: Path,
) -> None:
    tensorflow = _toolkit_shell(tmp_path, TF)  # 4.8.3
    for value, (code, shown) in zip(VALUES, tensorflow, strict=True):
        fails = code != 0 or not shown  # or its output went elsewhere than the job's log
        assert fails == bool(breaking(value)), (value, code, shown)
    assert sum(code != 0 for code, _ in tensorflow) >= 10  # the shell's syntax errors included
    pytorch = _toolkit_shell(tmp_path, "")  # 5.1.4: no shell
    assert pytorch == [[0, True]] * len(VALUES)


@pytest.fixture
def aws(moto_server: MotoServer, env: dict[str, str]) -> dict[str, str]:
    return {**env, **moto_server.aws_env()}


@pytest.mark.parametrize("mode", [["--dry-run", "--json"], ["--local"], ["--no-wait"]])
def test_a_tensorflow_jobs_hyperparameter_with_a_quote_is_refused_before_anything(
    mode: list[str], moto_server: MotoServer, aws: dict[str, str]
) -> None:
    argv = ["submit", "demo", "-N", "2", "-n", "2", "--role", ROLE, "--hyperparameter"]
    done = smmpi([*argv, "msg=it's", *mode], aws)
    line = refused(done, "hyperparameter msg", "/bin/sh", "--framework pytorch")
    assert "Unterminated quoted string" in line
    assert done.stdout == ""
    nothing_created(moto_server, aws)


def test_smmpi_run_refuses_it_before_any_process(fault_env: dict[str, str]) -> None:
    done = smmpi(["run", "demo", "-N", "2", "-n", "2", "--hyperparameter", "msg=a(b"], fault_env)
    refused(done, "hyperparameter msg", "'('", "TensorFlow")
    assert done.stdout == ""  # the fixture finds no run folder and no process left


def test_a_pytorch_job_takes_the_same_value_and_a_tensorflow_job_a_harmless_one(
    env: dict[str, str],
) -> None:
    base = ["submit", "demo", "-N", "2", "-n", "2", "--dry-run", "--json", "--hyperparameter"]
    for value, framework in (("it's", "pytorch"), ("a b $HOME", "tensorflow")):
        done = smmpi([*base, f"msg={value}", "--framework", framework], env)
        assert done.returncode == 0, done.stderr
        sent = json.loads(done.stdout)["request"]["HyperParameters"]["msg"]
        assert json.loads(sent) == value
