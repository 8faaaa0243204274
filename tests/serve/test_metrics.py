"""Training metrics from a real ``smmpi serve``: MetricDefinitions applied to the ranks' lines."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError

from smmpi.serve.metrics import JobMetrics
from tests.helpers import BIN, base_env
from tests.serve.serving import (
    REGION,
    ROLE,
    ServeProcess,
    dry_run_request,
    make_bucket,
    put_source,
    script_source,
    wait_end,
)

pytestmark = pytest.mark.aws

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

DEFINITIONS = [
    {"Name": "train:loss", "Regex": "train_loss=([0-9\\.]+)"},
    {"Name": "test:accuracy", "Regex": "accuracy: ([0-9.]+)"},
    {"Name": "never:seen", "Regex": "valid_loss=([0-9.]+)"},
]


def _request(serve: ServeProcess, bucket: str, name: str, definitions: Any) -> dict[str, Any]:
    request = dry_run_request(serve.env, name, bucket, "--instances", "1", "--ppn", "2")
    request["HyperParameters"]["sagemaker_program"] = json.dumps("train.py")
    request["AlgorithmSpecification"]["MetricDefinitions"] = definitions
    return request


def _run(serve: ServeProcess, bucket: str, name: str) -> dict[str, Any]:
    request = _request(serve, bucket, name, DEFINITIONS)
    put_source(serve, request, script_source(PRINTS))
    serve.client("sagemaker").create_training_job(**request)
    return wait_end(serve, name)


def test_final_metric_data_list_is_each_metrics_last_value(
    serve: ServeProcess, bucket: str, job_name: str
) -> None:
    desc = _run(serve, bucket, job_name)
    assert desc["TrainingJobStatus"] == "Completed", desc.get("FailureReason")
    final = {m["MetricName"]: m for m in desc["FinalMetricDataList"]}
    assert sorted(final) == ["test:accuracy", "train:loss"]  # never:seen has no value
    assert final["train:loss"]["Value"] == pytest.approx(0.3333)
    assert final["test:accuracy"]["Value"] == pytest.approx(0.75)
    for metric in final.values():
        assert desc["TrainingStartTime"] <= metric["Timestamp"] <= desc["TrainingEndTime"]
    shown = desc["AlgorithmSpecification"]["MetricDefinitions"]
    assert shown == DEFINITIONS
    smmpi = [str(BIN / "smmpi"), "status", job_name]
    status = subprocess.run(smmpi, env=serve.env, capture_output=True, text=True, timeout=120)
    assert status.returncode == 0, status.stderr
    assert "metrics    train:loss 0.3333, test:accuracy 0.75" in status.stdout.splitlines()
    shown = subprocess.run([*smmpi, "--json"], env=serve.env, capture_output=True, text=True)
    metrics = json.loads(shown.stdout)["final_metrics"]
    assert metrics == {"train:loss": 0.3333, "test:accuracy": 0.75}


def test_a_final_list_read_back_from_disk_keeps_the_definitions_order(tmp_path: Path) -> None:
    """Lines in another order than the definitions': the running job's list and the one a
    restarted serve reads from disk both follow the definitions."""
    request = {"AlgorithmSpecification": {"MetricDefinitions": DEFINITIONS}}
    metrics = JobMetrics(tmp_path)
    metrics.open("job", request, "us-west-2")
    metrics.feed("job", "algo-1", "accuracy: 0.75 of the test set", 1.0)
    metrics.feed("job", "algo-2", "epoch done: train_loss=0.5", 2.0)
    running = metrics.final("job")
    metrics.close("job")
    again = JobMetrics(tmp_path).final("job")
    assert running == again
    assert [m["MetricName"] for m in again or []] == ["train:loss", "test:accuracy"]


def test_smmpi_metrics_reads_a_served_jobs_series_through_cloudwatch(
    serve: ServeProcess, bucket: str, job_name: str, tmp_path: Path
) -> None:
    desc = _run(serve, bucket, job_name)
    assert desc["TrainingJobStatus"] == "Completed", desc.get("FailureReason")
    smmpi = [str(BIN / "smmpi"), "metrics", job_name]
    shown = subprocess.run([*smmpi, "--json"], env=serve.env, capture_output=True, text=True)
    assert shown.returncode == 0, shown.stderr
    series = json.loads(shown.stdout)
    assert series["job"] == job_name and series["local"] is False
    assert sorted(series["metrics"]) == ["test:accuracy", "train:loss"]  # never:seen: none
    losses = [p["value"] for p in series["metrics"]["train:loss"]]
    assert losses and all(0.25 <= v <= 0.5 for v in losses)  # each second's average
    assert [p["value"] for p in series["metrics"]["test:accuracy"]] == [0.75]
    start = desc["TrainingStartTime"].isoformat(timespec="seconds")[:19]
    assert all(p["timestamp"][:19] >= start for p in series["metrics"]["train:loss"])
    status = [str(BIN / "smmpi"), "status", job_name, "--metrics"]
    shown = subprocess.run(status, env=serve.env, capture_output=True, text=True)
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert "metrics    train:loss 0.3333, test:accuracy 0.75" in lines
    rows = lines[lines.index("") + 1 :]
    assert rows[0].split() == ["METRIC", "TIME", "VALUE"]
    assert {row.split()[0] for row in rows[1:]} == {"train:loss", "test:accuracy"}
    shown = subprocess.run([*status, "--json"], env=serve.env, capture_output=True, text=True)
    assert json.loads(shown.stdout)["metrics"]["test:accuracy"][0]["value"] == 0.75
    plot = tmp_path / "served.png"
    drawn = subprocess.run([*smmpi, "--plot", str(plot)], env=serve.env, capture_output=True)
    assert drawn.returncode == 0, drawn.stderr
    assert plot.read_bytes().startswith(b"\x89PNG")
    unknown = subprocess.run(
        [str(BIN / "smmpi"), "metrics", f"{job_name}-none"], env=serve.env, capture_output=True,
        text=True,
    )  # fmt: skip
    assert unknown.returncode == 2 and unknown.stdout == ""
    assert len(unknown.stderr.strip().splitlines()) == 1
    assert f"{job_name}-none" in unknown.stderr


@pytest.mark.parametrize(
    ("definitions", "words"),
    [
        (
            [DEFINITIONS[0], {"Name": "broken", "Regex": "loss=([0-9.]+"}],
            "AlgorithmSpecification.MetricDefinitions.2 ('broken'): its Regex is not a valid",
        ),
        (
            [{"Name": f"m{i}", "Regex": f"m{i}=([0-9.]+)"} for i in range(41)],
            "at 'algorithmSpecification.metricDefinitions' failed to satisfy constraint: "
            "Member must have length less than or equal to 40",
        ),
        (
            [{"Name": "n" * 256, "Regex": "x=(.+)"}],
            "at 'algorithmSpecification.metricDefinitions.1.member.name' failed to satisfy "
            "constraint: Member must have length less than or equal to 255",
        ),
        (
            [{"Name": "long", "Regex": "x" * 501}],
            "at 'algorithmSpecification.metricDefinitions.1.member.regex' failed to satisfy "
            "constraint: Member must have length less than or equal to 500",
        ),
    ],
    ids=["regex", "41", "name-length", "regex-length"],
)
def test_bad_metric_definitions_are_refused_and_nothing_is_created(
    serve: ServeProcess, bucket: str, job_name: str, definitions: Any, words: str
) -> None:
    sm = serve.client("sagemaker")
    with pytest.raises(ClientError) as err:
        sm.create_training_job(**_request(serve, bucket, job_name, definitions))
    error = err.value.response["Error"]
    assert error["Code"] == "ValidationException"
    assert words in error["Message"]
    assert "\n" not in error["Message"]
    with pytest.raises(ClientError) as err:
        sm.describe_training_job(TrainingJobName=job_name)
    assert err.value.response["Error"]["Message"] == "Requested resource not found"
    listed = sm.list_training_jobs(NameContains=job_name)["TrainingJobSummaries"]
    assert listed == []


ALL = ["SampleCount", "Sum", "Minimum", "Maximum", "Average"]


def _elsewhere(serve: ServeProcess) -> Any:
    """A CloudWatch client of another region than the jobs'."""
    import boto3

    assert REGION != "us-east-1"
    return boto3.client(  # type: ignore[call-overload]
        "cloudwatch", endpoint_url=serve.url, region_name="us-east-1",
        aws_access_key_id=serve.exports["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=serve.exports["AWS_SECRET_ACCESS_KEY"],
    )  # fmt: skip


def _statistics(cw: Any, desc: dict[str, Any], name: str, dims: list[dict[str, str]]) -> Any:
    return cw.get_metric_statistics(
        Namespace="/aws/sagemaker/TrainingJobs", MetricName=name, Dimensions=dims,
        StartTime=desc["TrainingStartTime"] - timedelta(minutes=1),
        EndTime=desc["TrainingEndTime"] + timedelta(minutes=1), Period=1, Statistics=ALL,
    )["Datapoints"]  # fmt: skip


def test_cloudwatch_gives_the_series_by_job_and_by_host(
    serve: ServeProcess, bucket: str, job_name: str
) -> None:
    desc = _run(serve, bucket, job_name)
    cw = serve.client("cloudwatch")
    by_job = [{"Name": "TrainingJobName", "Value": job_name}]
    by_host = [{"Name": "Host", "Value": f"{job_name}/algo-1"}]
    for dims in (by_job, by_host):
        points = _statistics(cw, desc, "train:loss", dims)
        assert sum(p["SampleCount"] for p in points) == 3
        assert sum(p["Sum"] for p in points) == pytest.approx(1.0833)
        assert min(p["Minimum"] for p in points) == pytest.approx(0.25)
        assert max(p["Maximum"] for p in points) == pytest.approx(0.5)
        for p in points:
            assert p["Average"] == pytest.approx(p["Sum"] / p["SampleCount"])
            assert desc["TrainingStartTime"] - timedelta(seconds=1) <= p["Timestamp"]
    assert _statistics(cw, desc, "train:loss", [{**by_host[0], "Value": "x/algo-1"}]) == []
    assert _statistics(_elsewhere(serve), desc, "train:loss", by_job) == []  # a region's own
    queries = [
        {"Id": "loss", "MetricStat": {"Metric": {"Namespace": "/aws/sagemaker/TrainingJobs",
         "MetricName": "train:loss", "Dimensions": by_job}, "Period": 3600, "Stat": "SampleCount"}},
        {"Id": "acc", "MetricStat": {"Metric": {"Namespace": "/aws/sagemaker/TrainingJobs",
         "MetricName": "test:accuracy", "Dimensions": by_host}, "Period": 3600, "Stat": "Maximum"}},
    ]  # fmt: skip
    data = cw.get_metric_data(
        MetricDataQueries=queries, StartTime=desc["TrainingStartTime"] - timedelta(hours=1),
        EndTime=desc["TrainingEndTime"] + timedelta(hours=1),
    )["MetricDataResults"]  # fmt: skip
    results = {r["Id"]: r for r in data}
    assert sum(results["loss"]["Values"]) == 3 and results["loss"]["Label"] == "train:loss"
    assert results["acc"]["Values"] == [pytest.approx(0.75)]
    listed = cw.list_metrics(Namespace="/aws/sagemaker/TrainingJobs", Dimensions=by_job)
    assert sorted(m["MetricName"] for m in listed["Metrics"]) == ["test:accuracy", "train:loss"]
    listed = cw.list_metrics(Dimensions=by_host, MetricName="train:loss")["Metrics"]
    assert listed == [{"Namespace": "/aws/sagemaker/TrainingJobs", "MetricName": "train:loss",
                       "Dimensions": by_host}]  # fmt: skip


def test_cloudwatch_refuses_what_it_cannot_answer_in_its_own_words(
    serve: ServeProcess, job_name: str
) -> None:
    cw = serve.client("cloudwatch")
    dims = [{"Name": "TrainingJobName", "Value": job_name}]
    with pytest.raises(ClientError) as err:
        cw.get_metric_statistics(
            Namespace="/aws/sagemaker/TrainingJobs", MetricName="train:loss", Dimensions=dims,
            StartTime=0, EndTime=1, Period=60, ExtendedStatistics=["p90"],
        )  # fmt: skip
    assert err.value.response["Error"]["Code"] == "InvalidParameterValue"
    assert "ExtendedStatistics" in err.value.response["Error"]["Message"]
    with pytest.raises(ClientError) as err:
        cw.get_metric_statistics(
            Namespace="/aws/sagemaker/TrainingJobs", MetricName="train:loss", Dimensions=dims,
            StartTime=100, EndTime=100, Period=60, Statistics=["Average"],
        )  # fmt: skip
    assert err.value.response["Error"] == {
        "Code": "InvalidParameterValue",
        "Message": "The parameter StartTime must be less than the parameter EndTime.",
    }
    with pytest.raises(ClientError) as err:
        cw.get_metric_data(
            MetricDataQueries=[{"Id": "e", "Expression": "SUM(METRICS())"}], StartTime=0, EndTime=1
        )
    assert "MetricDataQueries.member.1: smmpi serve answers MetricStat queries" in str(err.value)
    bad = serve.client("cloudwatch", secret="not-the-secret")
    with pytest.raises(ClientError) as err:
        bad.list_metrics()
    assert err.value.response["Error"]["Code"] == "InvalidSignatureException"


ANALYTICS = """
import sys
from sagemaker.analytics import TrainingJobAnalytics
from sagemaker.pytorch import PyTorch

estimator = PyTorch(
    entry_point="train.py", source_dir="{source}", role="{role}", framework_version="2.3",
    py_version="py311", instance_count=1, instance_type="ml.c5.2xlarge",
    distribution={{"mpi": {{"enabled": True, "processes_per_host": 2}}}},
    metric_definitions=[{{"Name": "train:loss", "Regex": "train_loss=([0-9\\\\.]+)"}}],
)
estimator.fit(wait=True, logs="None")
desc = estimator.latest_training_job.describe()
print("FINAL", [(m["MetricName"], m["Value"]) for m in desc["FinalMetricDataList"]])
frame = TrainingJobAnalytics(estimator.latest_training_job.name, metric_names=["train:loss"])
table = frame.dataframe()
print("COLUMNS", sorted(table.columns))
print("NAMES", sorted(set(table["metric_name"])))
print("VALUES", sorted(table["value"]))
"""


def test_the_sdks_estimator_and_training_job_analytics_see_the_metrics(
    serve: ServeProcess, tmp_path: Path
) -> None:
    source = tmp_path / "src"
    source.mkdir()
    (source / "train.py").write_text(PRINTS)
    script = ANALYTICS.format(source=source, role=ROLE)
    done = subprocess.run(
        [sys.executable, "-c", script], env=serve.env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stdout + done.stderr
    lines = {line.split(" ", 1)[0]: line.split(" ", 1)[1] for line in done.stdout.splitlines()
             if line.split(" ", 1)[0] in ("FINAL", "COLUMNS", "NAMES", "VALUES")}  # fmt: skip
    assert lines["FINAL"] == "[('train:loss', 0.3333)]"
    assert lines["COLUMNS"] == "['metric_name', 'timestamp', 'value']"
    assert lines["NAMES"] == "['train:loss']"
    values = json.loads(lines["VALUES"])
    assert values and all(0.25 <= v <= 0.5 for v in values)  # the minutes' averages


WAITS = """
import time
from mpi4py import MPI
if MPI.COMM_WORLD.Get_rank() == 0:
    print("train_loss=0.5", flush=True)
    print("train_loss=0.125", flush=True)
time.sleep(3600)  # until serve is killed
"""


def test_a_jobs_metrics_outlive_serve_killed_while_it_runs(tmp_path: Path) -> None:
    serve = ServeProcess(tmp_path / "state", base_env(tmp_path))
    again = None
    try:
        make_bucket(serve, "metrics-bucket")
        request = _request(serve, "metrics-bucket", "killed-with-metrics", DEFINITIONS[:1])
        put_source(serve, request, script_source(WAITS))
        sm = serve.client("sagemaker")
        sm.create_training_job(**request)
        deadline = time.monotonic() + 120
        final: list[dict[str, Any]] = []
        while not final or final[0]["Value"] != 0.125:  # shown while the job runs
            assert time.monotonic() < deadline, "no FinalMetricDataList while the job ran"
            desc = sm.describe_training_job(TrainingJobName="killed-with-metrics")
            assert desc["TrainingJobStatus"] == "InProgress"
            final = desc.get("FinalMetricDataList", [])
            time.sleep(0.2)
        serve.stop(signal.SIGKILL)
        again = ServeProcess(tmp_path / "state", base_env(tmp_path))
        desc = again.client("sagemaker").describe_training_job(
            TrainingJobName="killed-with-metrics"
        )
        assert desc["TrainingJobStatus"] == "Failed"
        assert [(m["MetricName"], m["Value"]) for m in desc["FinalMetricDataList"]] == [
            ("train:loss", 0.125)
        ]
        by_job = [{"Name": "TrainingJobName", "Value": "killed-with-metrics"}]
        points = _statistics(again.client("cloudwatch"), desc, "train:loss", by_job)
        assert sum(p["SampleCount"] for p in points) == 2
    finally:
        serve.stop()
        if again is not None:
            again.stop()
