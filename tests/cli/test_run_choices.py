"""``smmpi run --hyperparameter/--env/--mpi-options``: a rank sees what ``submit``'s request
with the same flags gives it (``submit --local`` is the reference: the SDK builds its request)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import base_env, no_run_dirs, smmpi, write

#: Every rank prints what the request's choices give it.
SHOW = """\
import json, os, sys
from mpi4py import MPI
keys = ("SM_HPS", "SM_HP_LR", "SM_HP_EPOCHS", "SM_USER_ARGS", "FOO", "FROM_MPI_OPTIONS")
seen = {"argv": sys.argv[1:], **{k: os.environ.get(k) for k in keys}}
print("SEEN", MPI.COMM_WORLD.rank, json.dumps(seen, sort_keys=True))
"""
CHOICES = [
    *("--hyperparameter", "lr=0.1", "--hyperparameter", "epochs=3"),
    *("--env", "FOO=bar baz", "--mpi-options", "-x FROM_MPI_OPTIONS=1"),
]


def _seen(stdout: str) -> dict[int, dict[str, object]]:
    found: dict[int, dict[str, object]] = {}
    for line in stdout.splitlines():
        if "SEEN " in line:
            rank, text = line.split("SEEN ", 1)[1].split(" ", 1)
            found[int(rank)] = json.loads(text)
    return found


@pytest.mark.parametrize("framework", ["tensorflow", "pytorch"])
def test_run_gives_every_rank_what_submit_local_gives(tmp_path: Path, framework: str) -> None:
    script = write(tmp_path / "show.py", SHOW)
    env = base_env(tmp_path)
    shape = ["-N", "2", "-n", "2", "--framework", framework, *CHOICES]
    ran = smmpi(["run", str(script), *shape], env, cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    submitted = smmpi(["submit", str(script), *shape, "--local"], env, cwd=tmp_path, timeout=300)
    assert submitted.returncode == 0, submitted.stderr
    here, reference = _seen(ran.stdout), _seen(submitted.stdout)
    assert sorted(here) == [0, 1, 2, 3]
    assert here == reference
    seen = here[3]  # a rank on algo-2
    model_dir = ["--model_dir", "/opt/ml/model"] if framework == "tensorflow" else []
    assert seen["argv"] == ["--epochs", "3", "--lr", "0.1", *model_dir]
    assert json.loads(str(seen["SM_HPS"]))["lr"] == "0.1"
    assert (seen["SM_HP_LR"], seen["FOO"], seen["FROM_MPI_OPTIONS"]) == ("0.1", "bar baz", "1")


def test_arguments_after_the_dash_dash_follow_the_hyperparameters(tmp_path: Path) -> None:
    script = write(tmp_path / "show.py", SHOW)
    args = ["run", str(script), "-N", "1", "-n", "1", "--framework", "pytorch"]
    r = smmpi([*args, "--hyperparameter", "lr=0.1", "--", "x"], base_env(tmp_path), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert _seen(r.stdout)[0]["argv"] == ["--lr", "0.1", "x"]


@pytest.mark.parametrize(
    ("flags", "field"),
    [
        (["--framework", "mxnet"], "framework"),
        (["--framework", "pytorch", "--framework-version", "0.1"], "framework_version"),
        (["--framework", "tensorflow", "--py-version", "py27"], "py_version"),
        (["--hyperparameter", "lr"], "hyperparameter"),
        (["--hyperparameter", "model_dir=/tmp"], "hyperparameter"),
        (["--hyperparameter", "sagemaker_program=x.py"], "hyperparameter"),
        (["--hyperparameter", f"lr={'1' * 2501}"], "hyperparameter"),
        ([a for i in range(101) for a in ("--hyperparameter", f"h{i}=1")], "hyperparameter"),
        (["--env", "AWS_SECRET_ACCESS_KEY=x"], "env"),
        (["--env", "1X=2"], "env"),
        (["--env", "NOEQUALS"], "env"),
        (["--mpi-options", "-np 3"], "mpi_options"),
        (["--mpi-options", "--host algo-9:1"], "mpi_options"),
        (["--mpi-options", "-x A=1;touch x"], "mpi_options"),
        (["--framework", "pytorch", "--from-job", "j"], "--framework"),
        (["--from-job", "j", "--env", "A=1"], "--env"),
        (["--from-job", "j", "--hyperparameter", "a=1"], "--hyperparameter"),
        (["--from-job", "j", "--mpi-options", "-x A=1"], "--mpi-options"),
        (["--from-job", "j", "--metric", "loss=loss=(.+)"], "--metric"),
    ],
)
def test_a_bad_choice_is_one_line_exit_2(tmp_path: Path, flags: list[str], field: str) -> None:
    script = write(tmp_path / "show.py", SHOW)
    env = {**base_env(tmp_path), "TMPDIR": str(tmp_path)}  # where a run folder would be made
    args = ["run", *flags] if "--from-job" in flags else ["run", str(script), *flags]
    r = smmpi(args, env, cwd=tmp_path)
    assert r.returncode == 2, (r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and f"invalid {field}" in lines[0], lines
    assert r.stdout == ""
    assert no_run_dirs(tmp_path)
