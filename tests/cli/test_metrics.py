"""Training metrics of local runs: ``--metric NAME=REGEX`` on ``smmpi run`` and ``submit --local``
(the request's MetricDefinitions applied to the ranks' output), and ``smmpi metrics JOB``."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from tests.helpers import base_env, no_run_dirs, processes_left, smmpi, write

#: Rank 0 logs a loss each epoch; rank 1 an accuracy once, and a NaN that is no value.
PRINTS = """
from mpi4py import MPI
rank = MPI.COMM_WORLD.Get_rank()
for loss in (0.5, 0.25, 0.3333):
    if rank == 0:
        print(f"epoch done: train_loss={loss}", flush=True)
    MPI.COMM_WORLD.Barrier()
if rank == 1:
    print("accuracy: 0.75 of the test set", flush=True)
    print("train_loss=nan is no value", flush=True)
"""
METRICS = [
    *("--metric", "train:loss=train_loss=([0-9.]+)"),
    *("--metric", "test:accuracy=accuracy: ([0-9.]+)"),
    *("--metric", "never:seen=valid_loss=([0-9.]+)"),
]
FINAL = {"train:loss": 0.3333, "test:accuracy": 0.75}


def _env(tmp_path: Path) -> dict[str, str]:
    (tmp_path / "tmp").mkdir(exist_ok=True)
    return {
        **base_env(tmp_path),
        "TMPDIR": str(tmp_path / "tmp"),
        "SMMPI_LOCAL_JOBS": str(tmp_path / "jobs"),
    }


def _final_line(line: str, job: str | None = None) -> dict[str, float]:
    """``smmpi: metrics a 1, b 2 (smmpi metrics JOB)`` as {a: 1, b: 2}."""
    assert line.startswith("smmpi: metrics "), line
    text = line.removeprefix("smmpi: metrics ")
    if job is not None:
        text = text.removesuffix(f" (smmpi metrics {job})")
    pairs = (item.rsplit(" ", 1) for item in text.split(", "))
    return {name: float(value) for name, value in pairs}


def test_run_applies_the_metrics_and_ends_with_their_final_values(tmp_path: Path) -> None:
    env = _env(tmp_path)
    script = write(tmp_path / "train.py", PRINTS)
    done = smmpi(["run", str(script), "-N", "2", "-n", "1", *METRICS], env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert _final_line(last) == FINAL
    assert "train_loss=nan is no value" in done.stdout  # the ranks' output is as it was
    assert no_run_dirs(tmp_path / "tmp")


def test_submit_local_keeps_the_series_and_smmpi_metrics_shows_it(tmp_path: Path) -> None:
    env = _env(tmp_path)
    script = write(tmp_path / "train.py", PRINTS)
    argv = ["submit", str(script), "-N", "2", "-n", "1", "--local", "--job-name", "with-metrics"]
    done = smmpi([*argv, *METRICS], env, cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr
    assert _final_line(done.stderr.strip().splitlines()[-1], "with-metrics") == FINAL
    folder = tmp_path / "jobs" / "with-metrics"
    record = json.loads((folder / "describe.json").read_text())
    assert {m["MetricName"]: m["Value"] for m in record["FinalMetricDataList"]} == FINAL
    names = [d["Name"] for d in record["AlgorithmSpecification"]["MetricDefinitions"]]
    assert names == ["train:loss", "test:accuracy", "never:seen"]  # the request's, as sent
    assert stat.S_IMODE((folder / "metrics.jsonl").stat().st_mode) == 0o600

    shown = smmpi(["metrics", "with-metrics", "--json"], env, cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    series = json.loads(shown.stdout)
    assert series["job"] == "with-metrics" and series["local"] is True
    points = series["metrics"]
    assert [p["value"] for p in points["train:loss"]] == [0.5, 0.25, 0.3333]
    assert [p["value"] for p in points["test:accuracy"]] == [0.75]
    times = [p["timestamp"] for p in points["train:loss"]]
    assert times == sorted(times) and record["TrainingStartTime"][:16] <= times[0][:16]
    table = smmpi(["metrics", "with-metrics"], env, cwd=tmp_path).stdout.splitlines()
    assert table[0].split() == ["METRIC", "TIME", "VALUE"]
    assert sorted((row.split()[0], row.split()[2]) for row in table[1:]) == [
        ("test:accuracy", "0.75"),
        ("train:loss", "0.25"),
        ("train:loss", "0.3333"),
        ("train:loss", "0.5"),
    ]

    # smmpi status of the local job, with no AWS region anywhere: from its folder too
    assert not {"AWS_REGION", "AWS_DEFAULT_REGION", "SMMPI_REGION", "AWS_ENDPOINT_URL"} & set(env)
    status = smmpi(["status", "with-metrics"], env, cwd=tmp_path)
    assert status.returncode == 0, status.stderr
    rows = dict(row.split(None, 1) for row in status.stdout.splitlines())
    assert rows["status"] == "Completed" and rows["processes"] == "1 per host, 2 in all"
    assert rows["metrics"] == "train:loss 0.3333, test:accuracy 0.75"
    assert rows["model"] == (folder / "model.tar.gz").as_uri()
    both = smmpi(["status", "with-metrics", "--json", "--metrics"], env, cwd=tmp_path)
    shown_json = json.loads(both.stdout)
    assert shown_json["local"] is True and shown_json["final_metrics"] == FINAL
    assert shown_json["metrics"] == points and shown_json["started"] is not None

    plot = tmp_path / "loss.png"
    drawn = smmpi(["metrics", "with-metrics", "--plot", str(plot)], env, cwd=tmp_path)
    assert drawn.returncode == 0, drawn.stderr
    assert drawn.stderr.strip() == f"smmpi: plot written to {plot}"
    assert plot.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    before = plot.read_bytes()
    again = smmpi(["metrics", "with-metrics", "--plot", str(plot)], env, cwd=tmp_path)
    assert again.returncode == 2 and again.stdout == ""
    assert again.stderr.strip().splitlines() == [
        f"smmpi: invalid --plot: '{plot}'; allowed: a file that does not exist yet "
        "(smmpi never overwrites)"
    ]
    assert plot.read_bytes() == before


def test_a_local_job_without_metric_definitions_has_no_metrics(tmp_path: Path) -> None:
    env = _env(tmp_path)
    script = write(tmp_path / "train.py", PRINTS)
    argv = ["submit", str(script), "-N", "1", "-n", "2", "--local", "--job-name", "no-metrics"]
    done = smmpi(argv, env, cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr
    assert not any("smmpi: metrics" in line for line in done.stderr.splitlines())
    folder = tmp_path / "jobs" / "no-metrics"
    assert "FinalMetricDataList" not in json.loads((folder / "describe.json").read_text())
    assert not (folder / "metrics.jsonl").exists()
    shown = smmpi(["metrics", "no-metrics"], env, cwd=tmp_path)
    assert shown.returncode == 0 and shown.stdout == ""
    assert shown.stderr.strip() == (
        "smmpi: no metrics for local job no-metrics (no MetricDefinitions matched)"
    )


def _no_matplotlib(tmp_path: Path) -> dict[str, str]:
    """A Python path on which ``import matplotlib`` fails, as where it is not installed."""
    shim = tmp_path / "shim" / "matplotlib"
    shim.mkdir(parents=True)
    write(shim / "__init__.py", "raise ImportError('No module named matplotlib')\n")
    return {"PYTHONPATH": str(tmp_path / "shim")}


@pytest.mark.parametrize(
    ("case", "rule"),
    [
        ("exists", "a file that does not exist yet (smmpi never overwrites)"),
        ("link", "a file that does not exist yet (smmpi never overwrites)"),
        ("dangling-link", "a file that does not exist yet (smmpi never overwrites)"),
        ("not-png", "a file name ending in .png"),
        ("no-folder", "a new file in an existing folder"),
        ("no-matplotlib", ""),
    ],
)
def test_a_bad_plot_is_one_line_and_writes_nothing(tmp_path: Path, case: str, rule: str) -> None:
    env = _env(tmp_path)
    theirs = write(tmp_path / "theirs.png", "a file smmpi did not make")
    plot = tmp_path / "plot.png"
    if case == "exists":
        plot = theirs
    elif case in ("link", "dangling-link"):
        target = theirs if case == "link" else tmp_path / "elsewhere.png"
        plot.symlink_to(target)
    elif case == "not-png":
        plot = tmp_path / "plot.jpg"
    elif case == "no-folder":
        plot = tmp_path / "missing" / "plot.png"
    else:
        env.update(_no_matplotlib(tmp_path))
    before = sorted(os.listdir(tmp_path))
    done = smmpi(["metrics", "some-job", "--plot", str(plot)], env, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    lines = done.stderr.strip().splitlines()
    if case == "no-matplotlib":
        assert lines == [
            "smmpi: --plot needs matplotlib, which is not installed: "
            "pip install 'smmpi[plot]' (or pip install matplotlib)"
        ]
    else:
        assert lines == [f"smmpi: invalid --plot: '{plot}'; allowed: {rule}"]
    assert sorted(os.listdir(tmp_path)) == before  # nothing made (nor through the link)
    assert theirs.read_text() == "a file smmpi did not make"
    assert not (tmp_path / "jobs").exists()
    assert processes_left(str(tmp_path)) == []


@pytest.mark.parametrize("api", ["estimator", "model-trainer"])
def test_the_dry_run_shows_the_metric_definitions_the_sdk_sends(tmp_path: Path, api: str) -> None:
    env = _env(tmp_path)
    script = write(tmp_path / "train.py", PRINTS)
    argv = ["submit", str(script), "-N", "2", "-n", "1", "--dry-run", "--json", "--api", api]
    done = smmpi([*argv, *METRICS], env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    shown = json.loads(done.stdout)["request"]["AlgorithmSpecification"]["MetricDefinitions"]
    assert shown == [
        {"Name": "train:loss", "Regex": "train_loss=([0-9.]+)"},
        {"Name": "test:accuracy", "Regex": "accuracy: ([0-9.]+)"},
        {"Name": "never:seen", "Regex": "valid_loss=([0-9.]+)"},
    ]
    plain = smmpi(argv, env, cwd=tmp_path)  # none asked: none sent, as the SDK's default
    assert "MetricDefinitions" not in json.loads(plain.stdout)["request"]["AlgorithmSpecification"]


def test_metrics_are_refused_with_the_slurm_backend(tmp_path: Path) -> None:
    env = _env(tmp_path)
    argv = ["submit", "demo", "-N", "1", "-n", "2", "--backend", "slurm", "--dry-run", *METRICS]
    done = smmpi(argv, env, cwd=tmp_path)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.strip().splitlines() == [
        "smmpi: invalid --metric: 'train:loss=train_loss=([0-9.]+)'; allowed: not with "
        "--backend slurm (no metrics)"
    ]
