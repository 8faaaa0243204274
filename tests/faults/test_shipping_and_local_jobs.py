"""What ships with a program, and the local jobs smmpi keeps.

Without ``--source-dir`` a user's script ships alone, as the SageMaker SDK
does with ``entry_point`` and no ``source_dir``; so a script that imports a
sibling module fails here as it would on SageMaker, and says what to do.
Local jobs are capped and can be listed and pruned; a folder smmpi did not
create is never touched.
"""

from __future__ import annotations

import json
import modulefinder
import os
from pathlib import Path

import pytest

from tests.helpers import MotoServer, smmpi

ROLE = "arn:aws:iam::123456789012:role/x"

LIST_CWD = """\
import os
from mpi4py import MPI

if MPI.COMM_WORLD.Get_rank() == 0:
    print("shipped:", sorted(os.listdir(".")))
"""


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """A user's folder: the script, an unrelated 1 MiB file and a sub-folder."""
    here = tmp_path / "project"
    (here / "data").mkdir(parents=True)
    (here / "train.py").write_text(LIST_CWD)
    (here / "big.bin").write_bytes(b"\0" * (1 << 20))
    (here / "data" / "rows.csv").write_text("1,2\n")
    return here


def test_a_script_without_source_dir_ships_alone(folder: Path, env: dict[str, str]) -> None:
    done = smmpi(["run", str(folder / "train.py"), "-N", "2", "-n", "1"], env)
    assert done.returncode == 0, done.stderr
    assert "shipped: ['smmpi_runtime.py', 'train.py']" in done.stdout
    plan = smmpi(
        ["submit", str(folder / "train.py"), "-N", "1", "-n", "2", "--dry-run", "--json"], env
    )
    data = json.loads(plan.stdout)
    assert data["files"] == ["smmpi_runtime.py", "train.py"]
    sizes = {p.name: p.stat().st_size for p in (folder / "train.py",)}
    assert data["source_bytes"] > sizes["train.py"]
    assert data["source_bytes"] < 1 << 20


def test_source_dir_ships_the_folder(folder: Path, env: dict[str, str]) -> None:
    args = ["run", str(folder / "train.py"), "--source-dir", str(folder), "-N", "1", "-n", "2"]
    done = smmpi(args, env)
    assert done.returncode == 0, done.stderr
    assert "shipped: ['big.bin', 'data', 'smmpi_runtime.py', 'train.py']" in done.stdout


def test_a_sibling_import_fails_as_on_sagemaker_and_names_the_fix(
    folder: Path, env: dict[str, str]
) -> None:
    (folder / "helper.py").write_text("VALUE = 3\n")
    (folder / "uses.py").write_text("import helper\nprint('value', helper.VALUE)\n")
    done = smmpi(["run", str(folder / "uses.py"), "-N", "1", "-n", "2"], env)
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert "ModuleNotFoundError" in last and "helper" in last, last
    assert "--source-dir" in last, last
    fixed = ["run", str(folder / "uses.py"), "--source-dir", str(folder), "-N", "1", "-n", "2"]
    assert smmpi(fixed, env).returncode == 0
    local = smmpi(["submit", str(folder / "uses.py"), "-N", "1", "-n", "2", "--local"], env)
    assert local.returncode == 1
    last = local.stderr.strip().splitlines()[-1]
    assert "helper.py" in last and f"--source-dir {folder}" in last, last


def test_the_dry_run_lists_files_and_their_total_size(folder: Path, env: dict[str, str]) -> None:
    args = [
        "submit",
        str(folder / "train.py"),
        "-N",
        "1",
        "-n",
        "2",
        "--source-dir",
        str(folder),
        "--dry-run",
    ]
    done = smmpi(args, env)
    assert done.returncode == 0, done.stderr
    data = json.loads(smmpi([*args, "--json"], env).stdout)
    assert sorted(data["files"]) == ["big.bin", "data/rows.csv", "smmpi_runtime.py", "train.py"]
    total = data["source_bytes"]
    assert total >= 1 << 20
    (line,) = [ln for ln in done.stdout.splitlines() if ln.startswith("  files")]
    assert f"{total:,} bytes" in line
    for name in data["files"]:
        assert name in line


@pytest.mark.aws
def test_a_large_source_dir_is_warned_about_before_upload(
    tmp_path: Path, moto_server: MotoServer, env: dict[str, str]
) -> None:
    code = tmp_path / "code"
    code.mkdir()
    (code / "train.py").write_text("print(1)\n")
    with (code / "weights.bin").open("wb") as f:  # sparse: cheap to make, 60 MB to ship
        f.truncate(60 * 1000 * 1000)
    aws = {**env, **moto_server.aws_env()}
    args = [
        "submit",
        str(code / "train.py"),
        "-N",
        "1",
        "-n",
        "2",
        "--source-dir",
        str(code),
        "--role",
        ROLE,
    ]
    done = smmpi([*args, "--no-wait", "--create-bucket", "--bucket", "big-code"], aws)
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    (warning,) = [i for i, ln in enumerate(lines) if "warning" in ln and "50 MB" in ln]
    (created,) = [i for i, ln in enumerate(lines) if "created training job" in ln]
    assert warning < created


def _siblings_needed(script: Path) -> set[str]:
    """The modules beside ``script`` that it imports, directly or not, as Python's own
    ``modulefinder`` finds them (searching only the script's folder)."""
    finder = modulefinder.ModuleFinder(path=[str(script.parent)])
    finder.run_script(str(script))
    return {
        f"{name}.py"
        for name, module in finder.modules.items()
        if name != "__main__" and module.__file__ and Path(module.__file__).parent == script.parent
    }


def test_packaged_entry_points_ship_every_sibling_module_they_import() -> None:
    from smmpi.catalog import entry_points_dir, packaged, resolve

    for ep in packaged():
        shipped = {name for _, name in resolve(ep.name).files()}
        needed = _siblings_needed(entry_points_dir() / f"{ep.name}.py")
        assert needed <= shipped, (ep.name, needed - shipped)
    assert "broadcast.py" in _siblings_needed(entry_points_dir() / "demo.py")


# ---------------------------------------------------------------- local jobs


def _local(env: dict[str, str], name: str) -> None:
    args = ["submit", "demo", "-N", "1", "-n", "2", "--local", "--job-name", name]
    done = smmpi(args, env)
    assert done.returncode == 0, done.stderr


def test_local_jobs_list_and_prune_spare_what_smmpi_did_not_create(
    env: dict[str, str], tmp_path: Path
) -> None:
    root = tmp_path / "local-jobs"
    env["SMMPI_LOCAL_JOBS"] = str(root)
    foreign = root / "my-notes"
    foreign.mkdir(parents=True)
    (foreign / "describe.json").write_text("{}")
    (root / "stray.txt").write_text("mine")
    _local(env, "older")
    _local(env, "newer")
    os.utime(root / "older" / "describe.json", (1, 1))
    listed = smmpi(["local-jobs", "list", "--json"], env)
    assert listed.returncode == 0, listed.stderr
    rows = json.loads(listed.stdout)
    assert [(r["name"], r["status"]) for r in rows] == [
        ("newer", "Completed"),
        ("older", "Completed"),
    ]
    text = smmpi(["local-jobs", "list"], env).stdout
    assert "older" in text and "newer" in text and "my-notes" not in text
    pruned = smmpi(["local-jobs", "prune", "--keep", "1"], env)
    assert pruned.returncode == 0, pruned.stderr
    assert "older" in pruned.stdout
    assert sorted(p.name for p in root.iterdir()) == ["my-notes", "newer", "stray.txt"]
    assert (foreign / "describe.json").read_text() == "{}"


def test_local_jobs_are_capped(env: dict[str, str], tmp_path: Path) -> None:
    root = tmp_path / "local-jobs"
    env.update(SMMPI_LOCAL_JOBS=str(root), SMMPI_LOCAL_JOBS_KEEP="1")
    (root / "keep-me").mkdir(parents=True)
    _local(env, "first")
    _local(env, "second")
    assert sorted(p.name for p in root.iterdir()) == ["keep-me", "second"]


def test_local_jobs_bad_keep_is_one_line(env: dict[str, str]) -> None:
    done = smmpi(["local-jobs", "prune", "--keep", "-1"], env)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == ["smmpi: invalid keep: -1; allowed: an integer >= 0"]
