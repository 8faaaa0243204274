"""smmpi serve: a job's cost over ``submit --local``, DescribeTrainingJob under 10 pollers,
ListTrainingJobs over 1,000 stored jobs, and serve's memory idle and over sequential jobs.

    python benchmarks/bench_serve.py [--runs 5] [--jobs 200] [--baseline OTHER/bin/smmpi]
                                     [--memory-baseline]

Every figure comes from this one invocation (medians of ``--runs`` alternating runs), so the
comparison is like with like on a shared machine. With ``--baseline``, the pollers are also
measured against that smmpi's serve (another checkout's venv), right before this one's.

The 10 clients are 10 processes (each its own connection, as 10 notebooks or scripts
would be); the raw-HTTP rows time the request and its answer only (each poller signs its
request before starting the clock), the boto3 rows time the whole call, the client's own
serializing, signing and parsing included.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
REGION = "us-west-2"
ROLE = "arn:aws:iam::123456789012:role/bench"
DEMO = ["broadcast.py", "demo.py", "gather_reduce_broadcast.py", "point_to_point.py",
        "smmpi_runtime.py"]  # fmt: skip


class Serve:
    """``smmpi serve --port 0`` in a process of its own, and boto3 clients for it."""

    def __init__(self, state: Path, env: dict[str, str], smmpi: str = str(BIN / "smmpi")) -> None:
        self.proc = subprocess.Popen(
            [smmpi, "serve", "--port", "0", "--state", str(state)],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, text=True,
            cwd=state.parent,
        )  # fmt: skip
        self.exports: dict[str, str] = {}
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.startswith("export "):
                name, _, value = line[7:].strip().partition("=")
                self.exports[name] = value
            if "listening on" in line:
                break
        threading.Thread(target=self.proc.stdout.read, daemon=True).start()

    def client(self, service: str) -> Any:
        import boto3

        return boto3.client(  # type: ignore[call-overload]
            service,
            endpoint_url=self.exports["AWS_ENDPOINT_URL"],
            region_name=REGION,
            aws_access_key_id=self.exports["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=self.exports["AWS_SECRET_ACCESS_KEY"],
        )

    def rss_mb(self) -> float:
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return float("nan")

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=120)


def _request(env: dict[str, str], name: str, bucket: str, instances: int, ppn: int) -> Any:
    out = subprocess.run(
        [str(BIN / "smmpi"), "submit", "demo", "--dry-run", "--json", "--instances", str(instances),
         "--ppn", str(ppn), "--bucket", bucket, "--role", ROLE, "--region", REGION,
         "--job-name", name],
        env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    return json.loads(out.stdout)["request"]


def _source() -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name in DEMO:
            tar.add(ROOT / "entry_points" / name, arcname=name)
    return buf.getvalue()


def _busy() -> bytes:
    """A program that keeps 6 ranks alive (printing) while the pollers run."""
    text = (
        b"import time\nfrom mpi4py import MPI\n"
        b"for i in range(600):\n    print(i, flush=True)\n    time.sleep(0.1)\n"
    )
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        info = tarfile.TarInfo("busy.py")
        info.size = len(text)
        tar.addfile(info, io.BytesIO(text))
    return buf.getvalue()


def _prepared(serve: Serve, env: dict[str, str], name: str, instances: int, ppn: int) -> Any:
    request = _request(env, name, "bench", instances, ppn)
    uri = json.loads(request["HyperParameters"]["sagemaker_submit_directory"])
    bucket, _, key = uri[5:].partition("/")
    serve.client("s3").put_object(Bucket=bucket, Key=key, Body=_source())
    return request


def _run_job(serve: Serve, request: Any) -> float:
    """Seconds from CreateTrainingJob to Completed (NaN, and a line, if it did not complete)."""
    sm = serve.client("sagemaker")
    request["StoppingCondition"] = {"MaxRuntimeInSeconds": 120}  # a hung run ends
    start = time.perf_counter()
    sm.create_training_job(**request)
    while True:
        status = sm.describe_training_job(TrainingJobName=request["TrainingJobName"])
        if status["TrainingJobStatus"] in ("Completed", "Failed", "Stopped"):
            if status["TrainingJobStatus"] != "Completed":
                why = status.get("FailureReason", status["SecondaryStatus"])[:200]
                print(f"  {request['TrainingJobName']}: {status['TrainingJobStatus']} ({why})")
                return float("nan")
            return time.perf_counter() - start
        time.sleep(0.02)


def _local(env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(
        [str(BIN / "smmpi"), "submit", "demo", "--instances", "3", "--ppn", "2", "--local"],
        env=env, capture_output=True, check=True,
    )  # fmt: skip
    return time.perf_counter() - start


def _poll_boto3(url: str, keys: tuple[str, str], name: str, seconds: float) -> list[float]:
    import boto3

    sm = boto3.client("sagemaker", endpoint_url=url, region_name=REGION,
                      aws_access_key_id=keys[0], aws_secret_access_key=keys[1])  # fmt: skip
    sm.describe_training_job(TrainingJobName=name)  # connected, before the clock starts
    latencies = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        t = time.perf_counter()
        sm.describe_training_job(TrainingJobName=name)
        latencies.append(time.perf_counter() - t)
    return latencies


def _poll_raw(url: str, keys: tuple[str, str], name: str, seconds: float) -> list[float]:
    """A bare signed HTTP request per call on one kept connection (no botocore parsing)."""
    import http.client

    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    host, port = url[7:].split(":")
    body = json.dumps({"TrainingJobName": name}).encode()
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    latencies = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        request = AWSRequest(method="POST", url=f"{url}/", data=body, headers={
            "X-Amz-Target": "SageMaker.DescribeTrainingJob",
            "Content-Type": "application/x-amz-json-1.1"})  # fmt: skip
        SigV4Auth(Credentials(*keys), "sagemaker", REGION).add_auth(request)
        t = time.perf_counter()
        conn.request("POST", "/", body=body, headers=dict(request.headers.items()))
        answer = conn.getresponse()
        answer.read()
        latencies.append(time.perf_counter() - t)
        assert answer.status == 200
    return latencies[1:]  # the first call opened the connection


def _one_poller(args: tuple[str, str, tuple[str, str], str, float]) -> list[float]:
    kind, url, keys, name, seconds = args
    return (_poll_raw if kind == "raw" else _poll_boto3)(url, keys, name, seconds)


def _pollers(serve: Serve, name: str, seconds: float, count: int, kind: str) -> list[float]:
    """``count`` clients, each a process of its own, polling as fast as answers come."""
    import multiprocessing

    keys = (serve.exports["AWS_ACCESS_KEY_ID"], serve.exports["AWS_SECRET_ACCESS_KEY"])
    job = (kind, serve.exports["AWS_ENDPOINT_URL"], keys, name, seconds)
    with multiprocessing.get_context("spawn").Pool(count) as pool:
        found = pool.map(_one_poller, [job] * count)
    return [x for latencies in found for x in latencies]


def _threads(serve: Serve, name: str, seconds: float, count: int = 10) -> list[float]:
    """``count`` boto3 clients as threads of this one process (they share its GIL)."""
    keys = (serve.exports["AWS_ACCESS_KEY_ID"], serve.exports["AWS_SECRET_ACCESS_KEY"])
    latencies: list[float] = []
    lock = threading.Lock()

    def poll() -> None:
        mine = _poll_boto3(serve.exports["AWS_ENDPOINT_URL"], keys, name, seconds)
        with lock:
            latencies.extend(mine)

    threads = [threading.Thread(target=poll) for _ in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return latencies


def _report(label: str, lat: list[float]) -> None:
    lat = sorted(lat)
    p99 = lat[int(len(lat) * 0.99) - 1]
    print(f"DescribeTrainingJob, {label}: {len(lat)} calls, median "
          f"{statistics.median(lat) * 1000:.1f} ms, p99 {p99 * 1000:.1f} ms")  # fmt: skip


def _start_busy(serve: Serve, env: dict[str, str], name: str) -> None:
    """A 3x2 job that keeps its 6 ranks printing, seen in Training."""
    sm = serve.client("sagemaker")
    busy = _request(env, name, "bench", 3, 2)
    busy["HyperParameters"]["sagemaker_program"] = json.dumps("busy.py")
    uri = json.loads(busy["HyperParameters"]["sagemaker_submit_directory"])
    serve.client("s3").put_object(Bucket="bench", Key=uri[5:].partition("/")[2], Body=_busy())
    sm.create_training_job(**busy)
    while sm.describe_training_job(TrainingJobName=name)["SecondaryStatus"] != "Training":
        time.sleep(0.1)


_KINDS = (
    ("1 boto3 poller", 1, "boto3"),
    ("10 raw signed-HTTP clients (processes)", 10, "raw"),
    ("10 boto3 clients (processes)", 10, "boto3"),
    ("10 boto3 pollers (threads of one process)", 10, "threads"),
)


def _describe_rows(serve: Serve, env: dict[str, str], label: str, rounds: int) -> None:
    """DescribeTrainingJob's latency while a 3x2 job runs, ``rounds`` times, each client kind."""
    found: dict[str, list[float]] = {}
    for i in range(rounds):
        name = f"bench-busy-{i}"
        _start_busy(serve, env, name)
        for kind, count, how in _KINDS:
            seconds = 3.0 if count == 1 else 5.0
            measured = (
                _threads(serve, name, seconds, count)
                if how == "threads"
                else _pollers(serve, name, seconds, count, how)
            )
            found.setdefault(kind, []).extend(measured)
        serve.client("sagemaker").stop_training_job(TrainingJobName=name)
        _wait_ended(serve, name)
    for kind, latencies in found.items():
        _report(f"{label}, {kind}, a 3x2 job running", latencies)


def _wait_ended(serve: Serve, name: str) -> None:
    sm = serve.client("sagemaker")
    while sm.describe_training_job(TrainingJobName=name)["TrainingJobStatus"] not in (
        "Completed", "Failed", "Stopped",
    ):  # fmt: skip
        time.sleep(0.2)


def _bucket(serve: Serve) -> None:
    serve.client("s3").create_bucket(
        Bucket="bench", CreateBucketConfiguration={"LocationConstraint": REGION}
    )


def _list_rows(serve: Serve, env: dict[str, str], stored: int) -> None:
    sm = serve.client("sagemaker")
    template = _request(env, "bench-list-x", "bench", 1, 2)
    template["AlgorithmSpecification"]["TrainingInputMode"] = "FastFile"  # stored, fails at once
    for i in range(1000):
        sm.create_training_job(**{**template, "TrainingJobName": f"bench-list-{i}"})
    calls = []
    for _ in range(20):
        t = time.perf_counter()
        page = sm.list_training_jobs(MaxResults=100, SortBy="CreationTime", SortOrder="Descending")
        calls.append(time.perf_counter() - t)
        assert len(page["TrainingJobSummaries"]) == 100
    filtered = []
    for _ in range(20):
        t = time.perf_counter()
        sm.list_training_jobs(NameContains="list-99", StatusEquals="Failed", MaxResults=100)
        filtered.append(time.perf_counter() - t)
    print(f"ListTrainingJobs over {1000 + stored} jobs: median "
          f"{statistics.median(calls) * 1000:.1f} ms (100 per page, sorted), "
          f"{statistics.median(filtered) * 1000:.1f} ms (filtered)")  # fmt: skip


WARM_UP = 20  # jobs before the memory baseline: caches and moto's lazy imports filled


def _memory_rows(serve: Serve, env: dict[str, str], jobs: int, label: str = "this") -> None:
    """RSS after a warm-up (the first ``WARM_UP`` sequential 1x2 jobs) and after ``jobs``,
    side by side, with every 50 jobs' mark, and how many completed."""
    marks = [f"{serve.rss_mb():.1f}"]
    done, warm = 0, float("nan")
    for i in range(jobs):
        seconds = _run_job(serve, _prepared(serve, env, f"bench-seq-{i}", 1, 2))
        done += seconds == seconds  # NaN when the job did not complete
        if i + 1 == WARM_UP:
            warm = serve.rss_mb()
        if (i + 1) % 50 == 0 or i + 1 == jobs:
            marks.append(f"{serve.rss_mb():.1f}")
    final = serve.rss_mb()
    per_job = (final - warm) * 1024 / max(1, jobs - WARM_UP)
    print(
        f"RSS ({label}) after {WARM_UP} jobs (warm-up): {warm:.1f} MB; after {jobs} jobs: "
        f"{final:.1f} MB; {per_job:+.1f} KB per job after the warm-up ({done} completed)"
    )
    print(f"RSS ({label}, MB) every 50 of {jobs} sequential 1x2 jobs: " + " -> ".join(marks))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--jobs", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=2, help="poller rounds per serve")
    parser.add_argument("--baseline", help="another checkout's smmpi, measured side by side")
    parser.add_argument("--memory-baseline", action="store_true",
                        help="also run the sequential jobs against --baseline's serve")  # fmt: skip
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-serve-"))
    try:
        _measure(args, tmp)
    finally:  # the servers' state and the jobs' folders go with the benchmark
        shutil.rmtree(tmp, ignore_errors=True)


def _measure(args: argparse.Namespace, tmp: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(HOME=str(tmp), PATH=f"{BIN}:{env.get('PATH', '')}", OMPI_ALLOW_RUN_AS_ROOT="1",
               OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", SAGEMAKER_SUPPRESS_V2_WARNING="1",
               SMMPI_LOCAL_JOBS=str(tmp / "local-jobs"))  # fmt: skip
    if args.baseline:
        (tmp / "baseline").mkdir()
        base = Serve(tmp / "baseline" / "state", env, args.baseline)
        _bucket(base)
        _describe_rows(base, env, "baseline", args.rounds)
        if args.memory_baseline:
            _memory_rows(base, env, args.jobs, "baseline")
        base.stop()
    serve = Serve(tmp / "state", env)
    time.sleep(1)
    print(f"idle RSS after start: {serve.rss_mb():.1f} MB")
    _bucket(serve)
    _describe_rows(serve, env, "this", args.rounds)
    via_serve, via_local = [], []
    for i in range(args.runs):
        via_local.append(_local(env))
        via_serve.append(_run_job(serve, _prepared(serve, env, f"bench-demo-{i}", 3, 2)))
    m_serve = statistics.median([x for x in via_serve if x == x] or [float("nan")])
    m_local = statistics.median(via_local)
    print(f"demo 3x2 CreateTrainingJob->Completed: median {m_serve:.2f} s "
          f"(runs {', '.join(f'{x:.2f}' for x in via_serve)})")  # fmt: skip
    print(f"demo 3x2 submit --local:               median {m_local:.2f} s "
          f"(runs {', '.join(f'{x:.2f}' for x in via_local)}); serve - local = "
          f"{m_serve - m_local:+.2f} s")  # fmt: skip
    _list_rows(serve, env, args.runs + args.rounds)
    _memory_rows(serve, env, args.jobs, "this")
    serve.stop()


if __name__ == "__main__":
    main()
