"""Jobs running: a thread per job, ``--parallel`` slots, the local runner in a worker process.

A job's life, as DescribeTrainingJob shows it:
Starting (waiting for a slot; the instances prepared, or taken from a warm pool) ->
Downloading (code and channels from S3) ->
Training (the worker runs the request through the local runner; its output
becomes the log) -> Uploading (model and output archives to S3) -> Completed,
Failed, or Stopping -> Stopped. MaxRuntimeInSeconds stops a job as
StopTrainingJob does, and it ends with secondary status MaxRuntimeExceeded.
"""

from __future__ import annotations

import contextlib
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from smmpi.platform import failure_reason
from smmpi.serve import platform
from smmpi.serve.forked import Forked, ForkServer
from smmpi.serve.job_keys import JobKeys
from smmpi.serve.jobs import TERMINAL, JobStore
from smmpi.serve.logs import JobLogs
from smmpi.serve.metrics import JobMetrics
from smmpi.serve.remote_access import RemoteAccess
from smmpi.serve.running import (
    STOP_GRACE,
    Running,
    pump_lines,
    read_result,
    worker_env,
    write_spec,
)
from smmpi.serve.s3store import S3Store
from smmpi.serve.state import subfolder
from smmpi.serve.warm_pools import WarmPools
from smmpi.toolkit import worker_log
from smmpi.toolkit.request import hosts
from smmpi.trees import TreeRefused


class JobRunner:
    """Starts, supervises and stops jobs; answers :mod:`.operations`' ``start`` and ``stop``."""

    def __init__(
        self,
        root: Path,
        store: JobStore,
        s3: S3Store,
        logs: JobLogs,
        *,
        parallel: int = 1,
        isolation: str | None = None,
        event: Callable[[str], None] = lambda line: None,
        exact: bool = False,
        access: RemoteAccess | None = None,
    ) -> None:
        self.store, self.s3, self.logs, self.event = store, s3, logs, event
        self.access = access or RemoteAccess(JobKeys(), lambda conn, *_: conn.close())
        self.isolation, self.exact = isolation, exact
        self.work_root = subfolder(root, "work")
        self.runs = subfolder(root, "runs")
        self.metrics = JobMetrics(
            root, lambda name, final: store.show(name, FinalMetricDataList=final)
        )
        self.slots = threading.Semaphore(parallel)
        self.pools = WarmPools(store, subfolder(root, "warm"), event)
        self.running: dict[str, Running] = {}
        self.lock = threading.Lock()

    def recover(self) -> None:
        """Jobs that were running when serve died end Failed, with a reason; their leftovers go."""
        for record in self.store.snapshot():
            if record["TrainingJobStatus"] not in TERMINAL:
                name = record["TrainingJobName"]
                reason = "smmpi serve stopped while the job was running; it did not finish"
                self._end(name, "Failed", FailureReason=reason)
                self.event(f"{name}: Failed ({reason})")
        for folder in (self.work_root, self.runs):
            for leftover in folder.iterdir():
                shutil.rmtree(leftover, ignore_errors=True)
        self.pools.recover()

    def start(self, name: str) -> None:
        running = Running()
        with self.lock:
            self.running[name] = running
        running.thread = threading.Thread(target=self._guarded, args=(name, running), daemon=True)
        running.thread.start()

    def stop(self, name: str, why: str = "Stopped") -> None:
        with self.lock:
            running = self.running.get(name)
        if running is None or running.stop.is_set():
            return
        running.why_stop = why
        running.stop.set()
        self.store.update(name, TrainingJobStatus="Stopping")
        self.store.transition(name, "Stopping")
        self.event(f"{name}: Stopping")
        proc = running.proc
        if proc is not None and proc.poll() is None:
            with contextlib.suppress(OSError):
                proc.send_signal(signal.SIGTERM)

    def shutdown(self, wait: float = 60.0) -> None:
        """Stop every job (its artifacts are still uploaded) and wait for them to end."""
        with self.lock:
            names = list(self.running)
        for name in names:
            self.stop(name)
        deadline = time.monotonic() + wait
        for name in names:
            thread = self.running.get(name, Running()).thread
            if thread is not None:
                thread.join(max(0.1, deadline - time.monotonic()))
        self.pools.close()

    def _end(self, name: str, status: str, secondary: str | None = None, **fields: Any) -> None:
        self.access.close(name)  # an @remote job's key and endpoint end before the job does
        now = time.time()
        record = self.store.get(name)
        start = record.get("TrainingStartTime")
        if start is not None:
            seconds = max(1, round(now - start))
            fields.setdefault("TrainingTimeInSeconds", seconds)
            fields.setdefault("BillableTimeInSeconds", seconds)
        final = self.metrics.final(name)
        if final:
            fields.setdefault("FinalMetricDataList", final)
        with self.store.lock:  # one change: no reader sees the status without its transition
            self.store.update(name, TrainingJobStatus=status, TrainingEndTime=now, **fields)
            self.store.transition(name, secondary or status)
            self.pools.release(name, status)  # nor without its WarmPoolStatus

    def _guarded(self, name: str, running: Running) -> None:
        try:
            self._run(name, running)
        except Exception as err:  # serve's own failure: the job still ends, with the reason
            self._end(name, "Failed", FailureReason=f"InternalServerError: {err}"[:1024])
            self.event(f"{name}: Failed (InternalServerError: {err})")
        finally:
            with self.lock:
                self.running.pop(name, None)
            if running.server is not None and not self.pools.keep_server(name, running.server):
                running.server.close()  # no pool keeps the job's instances
            self.access.close(name)
            self.metrics.close(name)
            with contextlib.suppress(OSError, KeyError, ValueError):  # else kept in memory
                self.logs.close(name)  # its events are read from disk from now on
            shutil.rmtree(self.work_root / name, ignore_errors=True)
            shutil.rmtree(self.runs / name, ignore_errors=True)

    def _run(self, name: str, running: Running) -> None:
        record = self.store.get(name)
        request = {k: v for k, v in record.items() if not k.startswith("_")}
        why = platform.unsupported(request)
        if why:
            self._end(name, "Failed", FailureReason=why)
            self.event(f"{name}: Failed ({why})")
            return
        self.event(f"{name}: Starting")
        with self.slots:
            if running.stop.is_set():
                self._end(name, "Stopped")
                return
            self.pools.claim(name)
            running.server = self._prepare(name)
            self._slot(name, request, record["_Region"], running)

    def _prepare(self, name: str) -> ForkServer:
        """The job's instances: its warm pool's, kept, or prepared now (``Starting``)."""
        kept = self.pools.take_server(name)
        if kept is not None:
            server, owner = kept
            if server.proc.poll() is None:
                kept_by = f"kept by {owner}'s pool"
                self.event(f"{name}: instances ready (process {server.pid}, {kept_by})")
                return server
            server.close()  # it ended meanwhile: its socket goes, and new instances are made
        server = ForkServer(self.work_root, worker_env(self.runs))
        self.event(f"{name}: instances ready (process {server.pid}, {server.seconds:.2f} s)")
        return server

    def _slot(self, name: str, request: dict[str, Any], region: str, running: Running) -> None:
        self.store.transition(name, "Downloading")
        self.event(f"{name}: Downloading")
        work = subfolder(self.work_root, name)
        try:
            local, source = platform.download(request, self.s3, work)
        except (KeyError, ValueError, OSError) as err:
            reason = f"ClientError: Data download failed: {err}"[:1024]
            self._end(name, "Failed", FailureReason=reason)
            self.event(f"{name}: Failed ({reason})")
            return
        if running.stop.is_set():
            self._end(name, "Stopped")
            return
        self.store.transition(name, "Training", TrainingStartTime=time.time())
        self.event(f"{name}: Training")
        result = self._train(name, local, request, source, region, work, running)
        self._conclude(name, request, result, work, running)

    def _train(
        self,
        name: str,
        local: dict[str, Any],
        request: dict[str, Any],
        source: bytes,
        region: str,
        work: Path,
        running: Running,
    ) -> dict[str, Any]:
        write_spec(work, {**local, "TrainingJobName": name}, source, self.isolation, self.exact)
        streams = self.logs.open(name, region, hosts(request))
        first = next(iter(streams))
        self.logs.workers(name, region, streams, lambda host: worker_log.starting())
        access = self.access.open(name, request, work, region)  # an @remote job's key, endpoint
        assert running.server is not None
        proc = running.server.fork(work / "spec.json", {**self.pools.worker_env(name), **access})
        running.proc = proc
        if running.stop.is_set():
            proc.send_signal(signal.SIGTERM)

        self.metrics.open(name, request, region)

        def to_log(line: str) -> None:
            self.logs.append(name, region, first, streams[first], [line])
            self.metrics.feed(name, first, line, time.time())

        def to_events(line: str) -> None:
            self.event(f"{name}: {line}")

        pumps = [
            threading.Thread(target=pump_lines, args=(proc.stdout, to_log), daemon=True),
            threading.Thread(target=pump_lines, args=(proc.stderr, to_events), daemon=True),
        ]
        for pump in pumps:
            pump.start()
        self._supervise(name, request, running, proc)
        for pump in pumps:
            pump.join(timeout=5)
        result = read_result(work, running, proc.returncode)
        if not running.stop.is_set():  # a stopped container prints nothing more
            done = result["status"] == "Completed"
            self.logs.workers(name, region, streams, lambda host: worker_log.ending(host, done))
        return result

    def _supervise(
        self, name: str, request: dict[str, Any], running: Running, proc: Forked
    ) -> None:
        limit = (request.get("StoppingCondition") or {}).get("MaxRuntimeInSeconds")
        deadline = time.monotonic() + float(limit) if limit else None
        stopped_at: float | None = None
        while proc.poll() is None:
            now = time.monotonic()
            if deadline is not None and now >= deadline and not running.stop.is_set():
                self.stop(name, "MaxRuntimeExceeded")
            if running.stop.is_set() and stopped_at is None:
                stopped_at = now
            if stopped_at is not None and now - stopped_at > STOP_GRACE:
                with contextlib.suppress(OSError):
                    proc.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=0.2)

    def _conclude(
        self,
        name: str,
        request: dict[str, Any],
        result: dict[str, Any],
        work: Path,
        running: Running,
    ) -> None:
        hosts_dir = self.runs / name / "hosts"
        if not running.stop.is_set():  # a stopped job uploads while it shows Stopping
            self.store.transition(name, "Uploading")
        fields: dict[str, Any] = {}
        try:
            model = platform.upload(request, name, hosts_dir, self.s3, work)
            fields["ModelArtifacts"] = {"S3ModelArtifacts": model}
        except TreeRefused as err:  # a rank linked a folder out of its instance
            result = {**result, "status": "Failed", "upload": f"AlgorithmError: {err}"}
        except (KeyError, ValueError, OSError) as err:
            result = {**result, "status": "Failed", "upload": f"ClientError: upload failed: {err}"}
        status, secondary = result["status"], None
        if result.get("short_world"):  # the job's own record keeps smmpi's line on its world
            fields["_ShortWorld"] = str(result["short_world"])
        if running.stop.is_set():
            status, secondary = "Stopped", running.why_stop
        elif status != "Completed":
            status = "Failed"
            fields["FailureReason"] = failure_reason.reason(request, result, hosts_dir)
        self._end(name, status, secondary, **fields)
        more = f" ({secondary})" if secondary and secondary != status else ""
        self.event(f"{name}: {status}{more}")
