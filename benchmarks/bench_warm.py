"""Warm instances: a repeated ``smmpi run --keep-warm`` and a serve job that reuses a warm pool,
each against its cold twin and bare ``mpirun``, measured side by side in one invocation.

    python benchmarks/bench_warm.py [--runs 5] [--skip-serve]

Runs alternate (bare, cold, warm, ...) so that the machine's load hits them alike; figures
are medians. The serve rows time CreateTrainingJob to the ``Training`` transition and to
``Completed`` for a job without a warm pool and for one that reuses the last job's pool.
Prints the load average before and after, and a JSON summary on the last line.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_hosts import ENV, make_pod, timed
from bench_local import BIN, _env, _time
from bench_serve import Serve, _bucket, _prepared


def _med(values: list[float]) -> float:
    return round(statistics.median(values), 3)


def _runs(runs: int, env: dict[str, str]) -> dict[str, Any]:
    from smmpi.catalog import entry_points_dir

    demo = entry_points_dir()
    bare = [str(BIN / "mpirun"), "--oversubscribe", "-np", "6", sys.executable, "-m", "mpi4py"]
    bare.append("demo.py")
    cold = [str(BIN / "smmpi"), "run", "demo", "-N", "3", "-n", "2"]
    warm = [*cold, "--keep-warm", "600"]
    os.environ.update(env)
    _time(bare, demo)
    _time(cold)
    _time(warm)  # makes the warm instances the measured runs reuse
    times: dict[str, list[float]] = {"bare": [], "cold": [], "warm": []}
    for _ in range(runs):
        times["bare"].append(_time(bare, demo))
        times["cold"].append(_time(cold))
        times["warm"].append(_time(warm))
    _time([str(BIN / "smmpi"), "run", "--keep-warm", "0"])
    medians = {k: _med(v) for k, v in times.items()}
    return {
        "medians_s": medians,
        "cold_x_bare": round(medians["cold"] / medians["bare"], 3),
        "warm_x_bare": round(medians["warm"] / medians["bare"], 3),
        "runs": {k: [round(x, 3) for x in v] for k, v in times.items()},
    }


def _pods(runs: int, tmp: Path) -> dict[str, Any]:
    """Set-up and teardown of 3 instances running ``true``: made by the pod, or kept (the
    lease taken, the kept namespaces joined), as each run of ``smmpi run`` pays it."""
    import dataclasses

    from smmpi.instances.hosts import launch
    from smmpi.instances.warm import lease

    where = tmp / "pods-warm"
    os.environ["SMMPI_WARM_DIR"] = str(where)

    def warm_pod(pod: launch.Pod) -> None:
        held = lease.take("bench-pod", 3, 600)
        assert held is not None
        proc = launch.start(dataclasses.replace(pod, warm=held.fds()), ["true"], ENV, "/")
        for fd in held.fds():
            os.close(fd)
        assert proc.wait() == 0

    warm_pod(make_pod(Path(tempfile.mkdtemp(dir=tmp)), 3))  # the keeper, made once
    cold: list[float] = []
    warm: list[float] = []
    for _ in range(runs):
        pod = make_pod(Path(tempfile.mkdtemp(dir=tmp)), 3)
        cold.append(timed(lambda p=pod: launch.start(p, ["true"], ENV, "/").wait() and None))
        pod = make_pod(Path(tempfile.mkdtemp(dir=tmp)), 3)
        warm.append(timed(lambda p=pod: warm_pod(p)))
    lease.end(where)
    return {"cold_s": _med(cold), "warm_s": _med(warm)}


def _job(serve: Serve, env: dict[str, str], name: str, keep: int | None) -> tuple[float, float]:
    """(CreateTrainingJob -> Training, -> Completed) in seconds."""
    request = _prepared(serve, env, name, 3, 2)
    if keep is not None:
        request["ResourceConfig"]["KeepAlivePeriodInSeconds"] = keep
    sm = serve.client("sagemaker")
    start = time.perf_counter()
    sm.create_training_job(**request)
    training = None
    while True:
        desc = sm.describe_training_job(TrainingJobName=name)
        if training is None and desc["SecondaryStatus"] not in ("Starting", "Downloading"):
            training = time.perf_counter() - start
        if desc["TrainingJobStatus"] in ("Completed", "Failed", "Stopped"):
            assert desc["TrainingJobStatus"] == "Completed", desc.get("FailureReason")
            return training or float("nan"), time.perf_counter() - start
        time.sleep(0.02)


def _serve(runs: int, env: dict[str, str], tmp: Path) -> dict[str, Any]:
    serve = Serve(tmp / "state", env)
    try:
        _bucket(serve)
        _job(serve, env, "warm-0", 600)  # the pool the first reusing job takes
        cold: list[tuple[float, float]] = []
        warm: list[tuple[float, float]] = []
        for i in range(runs):
            cold.append(_job(serve, env, f"cold-{i}", None))
            warm.append(_job(serve, env, f"warm-{i + 1}", 600))
        sm = serve.client("sagemaker")
        reused = sm.describe_training_job(TrainingJobName=f"warm-{runs - 1}")["WarmPoolStatus"]
    finally:
        serve.stop()
    to_training = {"cold": _med([c[0] for c in cold]), "reused": _med([w[0] for w in warm])}
    to_done = {"cold": _med([c[1] for c in cold]), "reused": _med([w[1] for w in warm])}
    return {
        "to_training_s": to_training,
        "to_completed_s": to_done,
        "reused_over_cold_completed": round(to_done["reused"] / to_done["cold"], 3),
        "last_reused_pool": reused,
    }


def _print_local(result: dict[str, Any]) -> None:
    local, pods = result["smmpi_run_3x2"], result["pod_3_instances"]
    print(f"pod of 3 running true: made {pods['cold_s']} s, kept (warm) {pods['warm_s']} s")
    print(f"bare mpirun -np 6 demo.py      : median {local['medians_s']['bare']} s")
    print(f"smmpi run demo -N 3 -n 2 (cold): median {local['medians_s']['cold']} s, "
          f"{local['cold_x_bare']}x bare (target <= 1.15)")  # fmt: skip
    print(f"same, --keep-warm (reused)     : median {local['medians_s']['warm']} s, "
          f"{local['warm_x_bare']}x bare (target <= 1.05)")  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--skip-serve", action="store_true")
    parser.add_argument("--serve-only", action="store_true", help="serve's rows only")
    opts = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-warm-"))
    env = {k: v for k, v in _env().items() if not k.startswith("AWS_")}
    env.update(HOME=str(tmp), SMMPI_WARM_DIR=str(tmp / "warm"), SAGEMAKER_SUPPRESS_V2_WARNING="1")
    env.update(SMMPI_LOCAL_JOBS=str(tmp / "local-jobs"))
    result: dict[str, Any] = {"load_before": os.getloadavg()[0]}
    try:
        if not opts.serve_only:
            result["pod_3_instances"] = _pods(opts.runs * 4, tmp)
            result["smmpi_run_3x2"] = _runs(opts.runs, env)
        if not opts.skip_serve:
            result["serve_3x2"] = _serve(opts.runs, env, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    result["load_after"] = os.getloadavg()[0]
    before, after = result["load_before"], result["load_after"]
    print(f"load average (1 min): {before:.1f} before, {after:.1f} after")
    if "smmpi_run_3x2" in result:
        _print_local(result)
    if "serve_3x2" in result:
        served = result["serve_3x2"]
        cold, reused = served["to_training_s"]["cold"], served["to_training_s"]["reused"]
        print(f"serve 3x2 Create->Training : cold {cold} s, reused {reused} s, "
              f"{cold / reused:.1f}x sooner (target >= 3)")  # fmt: skip
        print(f"serve 3x2 Create->Completed: cold {served['to_completed_s']['cold']} s, "
              f"reused {served['to_completed_s']['reused']} s")  # fmt: skip
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
