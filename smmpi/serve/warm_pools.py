"""Warm pools, as SageMaker keeps them: a job's instances kept for the next matching job.

A job whose ``ResourceConfig.KeepAlivePeriodInSeconds`` is above 0 shows a
``WarmPoolStatus``:
- ``InUse`` while it runs (its instances are in use for it);
- ``Available`` once it has completed: its instances are kept for that many seconds;
- ``Reused`` when a matching job started on them within that time (``ReusedByJob``
  names it; that job is ``InUse``, then ``Available`` in its turn);
- ``Terminated`` at the end of the period, when ``UpdateTrainingJob`` sets the period to 0,
  when serve stops (nothing outlives serve), or at once for a job that did not complete.

``ResourceRetainedBillableTimeInSeconds`` is the time the instances were kept after the job:
until a matching job took them, or until they were terminated.

A pool keeps its instances: their networks (the keeper, :mod:`smmpi.instances.warm`) and the
fork server they were prepared as (:mod:`.forked`), so a job that reuses it reaches ``Training``
without preparing any. Each job still gets fresh files, ``/tmp`` and processes.

A job matches a pool when it is of the same region and has the same role, instance type and
count, volume, network settings and keep-alive period (SageMaker's matching rules; a
heterogeneous cluster's ``InstanceGroups`` never match).
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from smmpi.aws.facts import KEEP_ALIVE_LIMIT
from smmpi.instances.warm import lease
from smmpi.serve.errors import validation
from smmpi.serve.forked import ForkServer
from smmpi.serve.jobs import JobStore

#: The request's fields a matching job must have equal (SageMaker's matching rules).
MATCHED = (
    "RoleArn",
    "VpcConfig",
    "EnableNetworkIsolation",
    "EnableInterContainerTrafficEncryption",
)
#: Of its ``ResourceConfig``.
MATCHED_RESOURCES = (
    "InstanceType",
    "InstanceCount",
    "VolumeSizeInGB",
    "VolumeKmsKeyId",
    "KeepAlivePeriodInSeconds",
)


def keep_alive(request: dict[str, Any]) -> int:
    """The job's keep-alive period in seconds (0: no warm pool)."""
    resources = request.get("ResourceConfig") or {}
    if "InstanceGroups" in resources:
        return 0
    return int(resources.get("KeepAlivePeriodInSeconds") or 0)


def pool_key(region: str, request: dict[str, Any]) -> str:
    """What a job must share with a pool to reuse it."""
    resources = request.get("ResourceConfig") or {}
    shared = {field: request.get(field) for field in MATCHED}
    shared.update({field: resources.get(field) for field in MATCHED_RESOURCES})
    shared["VolumeSizeInGB"] = shared["VolumeSizeInGB"] or 30
    return json.dumps([region, shared], sort_keys=True, default=str)


@dataclass
class Pool:
    """A completed job's instances, kept: ``owner``'s WarmPoolStatus is the pool's."""

    owner: str
    key: str
    since: float  # when the owner ended (the retained time counts from here)
    keeper: str  # the name of the keeper that holds its instances' networks (lease.py)
    timer: threading.Timer | None = None
    server: ForkServer | None = None  # its instances' fork server, prepared already


class WarmPools:
    """Every Available pool of serve, and the WarmPoolStatus of the jobs that made them."""

    def __init__(
        self,
        store: JobStore,
        folder: Path,
        event: Callable[[str], None] = lambda line: None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.store, self.folder, self.event, self.clock = store, folder, event, clock
        self.pools: dict[str, Pool] = {}  # owner -> its pool
        self.keepers: dict[str, str] = {}  # a running job -> the keeper of its instances
        self.taken: dict[str, tuple[ForkServer, str]] = {}  # a starting job -> its pool's
        self.lock = threading.Lock()

    def worker_env(self, name: str) -> dict[str, str]:
        """What job ``name``'s worker needs to run on its pool's instances, and keep them."""
        seconds = min(keep_alive(self.store.get(name)), KEEP_ALIVE_LIMIT)
        keeper = self.keepers.get(name)
        if not seconds or keeper is None:
            return {}
        return {
            lease.ENV: str(seconds),
            lease.POOL: keeper,
            lease.OWNER: str(os.getpid()),  # its instances end with serve, however it ends
            "SMMPI_WARM_DIR": str(self.folder),
        }

    def _status(self, name: str, status: str, **more: Any) -> None:
        self.store.update(name, WarmPoolStatus={"Status": status, **more})

    def _retained(self, pool: Pool) -> int:
        return max(0, round(self.clock() - pool.since))

    def claim(self, name: str) -> str | None:
        """As job ``name`` starts: take a matching Available pool (its owner becomes Reused);
        the job shows InUse. Returns the pool's previous owner, or None (a cold start)."""
        record = self.store.get(name)
        if not keep_alive(record):
            return None
        key = pool_key(record["_Region"], record)
        with self.lock:
            pool = next((p for p in self.pools.values() if p.key == key), None)
            if pool is not None:
                del self.pools[pool.owner]
                if pool.timer is not None:
                    pool.timer.cancel()
        with self.lock:  # the pool's instances, or new ones named after the job
            self.keepers[name] = pool.keeper if pool is not None else f"job-{name}"
            if pool is not None and pool.server is not None:
                self.taken[name] = (pool.server, pool.owner)
        if pool is not None:
            self._status(
                pool.owner,
                "Reused",
                ResourceRetainedBillableTimeInSeconds=self._retained(pool),
                ReusedByJob=name,
            )
            self.event(f"{name}: reuses the warm pool of {pool.owner}")
        self._status(name, "InUse")
        return pool.owner if pool is not None else None

    def take_server(self, name: str) -> tuple[ForkServer, str] | None:
        """The fork server of the pool job ``name`` claimed, and the pool's owner (or None)."""
        with self.lock:
            return self.taken.pop(name, None)

    def keep_server(self, name: str, server: ForkServer) -> bool:
        """After job ``name`` ended: its pool, when it has one, keeps its fork server."""
        with self.lock:
            pool = self.pools.get(name)
            if pool is None:
                return False
            pool.server = server
            return True

    def release(self, name: str, status: str) -> None:
        """As job ``name`` ends: a completed job's instances become an Available pool."""
        record = self.store.get(name)
        seconds = keep_alive(record)
        with self.lock:
            keeper = self.keepers.pop(name, f"job-{name}")
        if not seconds:
            return
        if status != "Completed":
            lease.end(self.folder, keeper)
            self._status(name, "Terminated", ResourceRetainedBillableTimeInSeconds=0)
            return
        pool = Pool(name, pool_key(record["_Region"], record), self.clock(), keeper)
        with self.lock:
            self.pools[name] = pool
        self._status(name, "Available")
        self._expire_after(pool, seconds)

    def _expire_after(self, pool: Pool, seconds: float) -> None:
        timer = threading.Timer(max(0.0, seconds), self._terminate, args=(pool.owner, pool))
        timer.daemon = True
        pool.timer = timer
        timer.start()

    def _terminate(self, owner: str, pool: Pool | None = None) -> None:
        """End ``owner``'s pool (when it is still ``pool``, for a timer that fired late)."""
        with self.lock:
            current = self.pools.get(owner)
            if current is None or (pool is not None and current is not pool):
                return
            del self.pools[owner]
            if current.timer is not None:
                current.timer.cancel()
        if current.server is not None:
            current.server.close()
        lease.end(self.folder, current.keeper)
        retained = self._retained(current)
        self._status(owner, "Terminated", ResourceRetainedBillableTimeInSeconds=retained)
        self.event(f"{owner}: warm pool terminated after {retained} s")

    def update(self, name: str, seconds: int) -> None:
        """UpdateTrainingJob's ResourceConfig: a new keep-alive period for an InUse or
        Available pool (counted from the job's end; 0 ends an Available pool now)."""
        record = self.store.get(name)
        status = (record.get("WarmPoolStatus") or {}).get("Status")
        if status not in ("InUse", "Available"):
            raise validation(
                "KeepAlivePeriodInSeconds can be updated only for a training job whose warm "
                f"pool is InUse or Available; {name}'s is {status or 'absent'}"
            )
        resources = {**record["ResourceConfig"], "KeepAlivePeriodInSeconds": seconds}
        self.store.update(name, ResourceConfig=resources)
        with self.lock:
            pool = self.pools.get(name)
            keeper = pool.keeper if pool is not None else self.keepers.get(name)
            if pool is not None:
                pool.key = pool_key(record["_Region"], {**record, "ResourceConfig": resources})
                if pool.timer is not None:
                    pool.timer.cancel()
        if keeper is not None and seconds:  # its instances are kept as long
            lease.keep(self.folder, keeper, min(seconds, KEEP_ALIVE_LIMIT))
        if pool is not None:
            self._expire_after(pool, pool.since + seconds - self.clock())

    def close(self) -> None:
        """serve stops: every Available pool is Terminated (nothing outlives serve)."""
        with self.lock:
            owners = list(self.pools)
        for owner in owners:
            self._terminate(owner)

    def recover(self) -> None:
        """After serve ended without closing them: pools it left Available are Terminated,
        and the instances it kept for them end."""
        lease.end(self.folder)
        for summary in self.store.snapshot():
            name = summary["TrainingJobName"]
            shown = summary.get("WarmPoolStatus") or {}
            if shown.get("Status") in ("Available", "InUse"):
                record = self.store.get(name)
                ended = record.get("TrainingEndTime") or record["LastModifiedTime"]
                kept = min(keep_alive(record), max(0, round(self.clock() - ended)))
                self._status(name, "Terminated", ResourceRetainedBillableTimeInSeconds=kept)


def update_job(pools: WarmPools, params: dict[str, Any], region: str) -> dict[str, Any]:
    """UpdateTrainingJob: the warm pool's retention (the only field of it serve changes)."""
    record = pools.store.get(params["TrainingJobName"], region)
    resources = params.get("ResourceConfig")
    if resources is None:
        raise validation("serve's UpdateTrainingJob changes ResourceConfig's keep-alive only")
    pools.update(record["TrainingJobName"], int(resources["KeepAlivePeriodInSeconds"]))
    return {"TrainingJobArn": record["TrainingJobArn"]}
