"""smmpi serve's CPU for training metrics: a job printing 10,000 lines, with and without 3
MetricDefinitions (each line matched by all three regexes, each match a point kept).

    python benchmarks/bench_metrics.py [--runs 5] [--lines 10000] [--unmatched]

One ``smmpi serve`` runs both kinds of job, alternating in ABBA order (without, with, with,
without, ...), so the comparison is like with like on a shared machine. What is measured is
the CPU seconds of serve's own process (its threads: the HTTP server, the job's thread, the
log pumps that feed the metrics; /proc/PID/stat's utime + stime) from CreateTrainingJob to
3 s after Completed (the job's own end), not wall time, and not the job's worker and ranks
(processes of their own, the same in both). The client polls DescribeTrainingJob every
0.5 s, which serve answers in both. ``--unmatched`` gives the 3 definitions a prefix no line
has: the cost of looking alone. The last line is the metrics code alone, in-process (lines fed
to ``JobMetrics`` as serve's log pump feeds them), against serve's CPU without metrics.
"""

from __future__ import annotations

import argparse
import io
import os
import shutil
import statistics
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any

from bench_serve import BIN, Serve, _request

SETTLE = 3.0  # seconds after Completed that still count as the job's

DEFINITIONS = [
    {"Name": "train:loss", "Regex": r"train_loss=([0-9.]+)"},
    {"Name": "train:accuracy", "Regex": r"accuracy=([0-9.]+)"},
    {"Name": "step", "Regex": r"step ([0-9]+)"},
]


def _source(lines: int) -> bytes:
    """A program whose rank 0 prints ``lines`` lines, each giving all three metrics."""
    text = (
        "from mpi4py import MPI\n"
        "if MPI.COMM_WORLD.rank == 0:\n"
        f"    for i in range({lines}):\n"
        "        print(f'step {i} train_loss={1 / (i + 1):.6f} accuracy={i / "
        f"{lines}:.6f}}', flush=True)\n"
    ).encode()
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        info = tarfile.TarInfo("prints.py")
        info.size = len(text)
        tar.addfile(info, io.BytesIO(text))
    return buf.getvalue()


def cpu_seconds(pid: int) -> float:
    """utime + stime of process ``pid`` (all its threads, not its children)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _job(serve: Serve, env: dict[str, str], name: str, source: bytes, metrics: bool) -> float:
    """serve's CPU seconds for one job from CreateTrainingJob to Completed."""
    request = _request(env, name, "bench", 1, 2)
    request["HyperParameters"]["sagemaker_program"] = '"prints.py"'
    request["StoppingCondition"] = {"MaxRuntimeInSeconds": 600}
    if metrics:
        request["AlgorithmSpecification"]["MetricDefinitions"] = DEFINITIONS
    uri = request["HyperParameters"]["sagemaker_submit_directory"].strip('"')
    bucket, _, key = uri[5:].partition("/")
    sm = serve.client("sagemaker")
    serve.client("s3").put_object(Bucket=bucket, Key=key, Body=source)
    before = cpu_seconds(serve.proc.pid)
    sm.create_training_job(**request)
    while True:
        desc: Any = sm.describe_training_job(TrainingJobName=name)
        if desc["TrainingJobStatus"] in ("Completed", "Failed", "Stopped"):
            break
        time.sleep(0.5)
    time.sleep(SETTLE)  # the job's own end (its log kept on disk...) counts in its own window
    spent = cpu_seconds(serve.proc.pid) - before
    if desc["TrainingJobStatus"] != "Completed":
        sys.exit(f"{name}: {desc['TrainingJobStatus']} ({desc.get('FailureReason')})")
    if metrics and not DEFINITIONS[0]["Regex"].startswith("never "):
        final = {m["MetricName"]: m["Value"] for m in desc.get("FinalMetricDataList", [])}
        assert final.get("step") is not None and final["step"] >= 0, final
    return spent


def in_process(lines: int) -> float:
    """CPU seconds of serve's metrics code alone: ``lines`` log lines fed to ``JobMetrics`` as
    serve's log pump feeds them, each then on disk (medians of 5)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from smmpi.serve.metrics import JobMetrics

    text = [f"[1,mpirank:0,algo-1]<stdout>:step {i} train_loss={1 / (i + 1):.6f} "
            f"accuracy={i / lines:.6f}" for i in range(lines)]  # fmt: skip
    spent = []
    for run in range(5):
        with tempfile.TemporaryDirectory() as root:
            metrics = JobMetrics(Path(root), lambda name, final: None)
            metrics.open(f"j{run}", {"AlgorithmSpecification": {"MetricDefinitions": DEFINITIONS}},
                         "us-west-2")  # fmt: skip
            start = time.process_time()
            for line in text:
                metrics.feed(f"j{run}", "algo-1", line, time.time())
            metrics.close(f"j{run}")
            spent.append(time.process_time() - start)
    return statistics.median(spent)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--lines", type=int, default=10_000)
    parser.add_argument("--unmatched", action="store_true", help="3 definitions that match no line")
    args = parser.parse_args()
    if args.unmatched:
        DEFINITIONS[:] = [{"Name": d["Name"], "Regex": "never " + d["Regex"]} for d in DEFINITIONS]
    tmp = Path(tempfile.mkdtemp(prefix="bench-metrics-"))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "SMMPI_"))}
    env.update(HOME=str(tmp), PATH=f"{BIN}:{env.get('PATH', '')}", OMPI_ALLOW_RUN_AS_ROOT="1",
               OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", SAGEMAKER_SUPPRESS_V2_WARNING="1",
               SMMPI_LOCAL_JOBS=str(tmp / "local-jobs"))  # fmt: skip
    serve = Serve(tmp / "state", env)
    try:
        serve.client("s3").create_bucket(
            Bucket="bench", CreateBucketConfiguration={"LocationConstraint": "us-west-2"}
        )
        source = _source(args.lines)
        _job(serve, env, "bench-metrics-warm", source, True)  # imports, first connections
        without, with_ = [], []
        for i in range(args.runs):  # ABBA: neither kind always goes first
            for on in (False, True) if i % 2 == 0 else (True, False):
                kind = "on" if on else "off"
                spent = _job(serve, env, f"bench-metrics-{kind}-{i}", source, on)
                (with_ if on else without).append(spent)
            print(f"run {i}: without {without[-1]:.2f} s, with {with_[-1]:.2f} s CPU", flush=True)
    finally:
        serve.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    off, on = statistics.median(without), statistics.median(with_)
    paired = statistics.median(b / a for a, b in zip(without, with_, strict=True))
    alone = in_process(args.lines)
    print(f"serve CPU, a job printing {args.lines} lines, medians of {args.runs}:")
    print(f"  without MetricDefinitions: {off:.3f} s")
    print(f"  with 3 MetricDefinitions:  {on:.3f} s  ({on / off:.3f}x; paired {paired:.3f}x)")
    print(f"  the metrics code alone, in-process: {alone:.3f} s ({alone / off:.1%} of without)")


if __name__ == "__main__":
    main()
