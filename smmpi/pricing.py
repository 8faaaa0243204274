"""What a job may cost, before it is paid for: a dated, region-aware on-demand price table.

The table (``smmpi/data/prices.json``) ships with the package so ``submit
--dry-run`` works offline and with no credentials. It is an estimate with a
date on it, and every result says so: prices change, and the Price List API
needs credentials and a network that a dry run must not need.
"""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources
from typing import Any

from smmpi.errors import BadInput

DEFAULT_REGION = "us-east-1"
#: Billed on every instance after the program ends: sagemaker-training 5.x's MasterRunner.run
#: sleeps 30 s after mpirun; each WorkerRunner.run sleeps 30 s once its orted exits, then
#: polls for algo-1's status file every 30 s.
TEARDOWN_S = 30
#: ModelTrainer's MPI driver (sm_drivers/distributed_drivers/mpi_utils.py): algo-1 ends once it
#: has written the status file to the workers; each worker looks for it every 30 s.
DRIVER_POLL_S = 30


@lru_cache(maxsize=1)
def table() -> dict[str, Any]:
    """The shipped table: ``{"as_of", "label", "note", "regions": {region: {type: usd}}}``."""
    text = resources.files("smmpi").joinpath("data/prices.json").read_text(encoding="utf-8")
    data: dict[str, Any] = json.loads(text)
    return data


def price_per_hour(instance_type: str, region: str | None = None) -> float | None:
    """On-demand USD per instance-hour, or None when the table does not know it."""
    prices = table()["regions"].get(region or DEFAULT_REGION, {})
    value = prices.get(instance_type)
    return float(value) if value is not None else None


def estimate(
    instance_type: str,
    count: int,
    max_run_s: float | int,
    region: str | None = None,
    api: str = "estimator",
) -> dict[str, Any]:
    """Hourly price of ``count`` instances and the cost ceiling if the job runs ``max_run_s``.

    Never raises for an unknown type or region (a dry run must still print its
    plan): prices are then None and ``note`` says why. Bad numbers are
    ``BadInput``. Keys: instance_type, count, region, max_run_s, currency,
    price_per_instance_hour, price_per_hour, max_cost, as_of, estimate (True),
    label, source, note, teardown_s_per_instance, teardown_cost, teardown_by (``api``).
    """
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise BadInput("instances", count, "an integer >= 1")
    if isinstance(max_run_s, bool) or not isinstance(max_run_s, (int, float)) or max_run_s <= 0:
        raise BadInput("max run", max_run_s, "seconds > 0")
    data = table()
    where = region or DEFAULT_REGION
    unit = price_per_hour(instance_type, where)
    if where not in data["regions"]:
        note = f"no prices for region {where}; the table covers " + ", ".join(
            sorted(data["regions"])
        )
    elif unit is None:
        note = f"no price for {instance_type} in {where}; see {data['source']}"
    else:
        note = str(data["note"])
    hourly = None if unit is None else round(unit * count, 4)
    ceiling = None if hourly is None else round(hourly * float(max_run_s) / 3600.0, 2)
    return {
        "instance_type": instance_type,
        "count": count,
        "region": where,
        "max_run_s": max_run_s,
        "currency": str(data["currency"]),
        "price_per_instance_hour": unit,
        "price_per_hour": hourly,
        "max_cost": ceiling,
        "as_of": str(data["as_of"]),
        "estimate": True,
        "label": str(data["label"]),
        "source": str(data["source"]),
        "note": note,
        **_teardown(api, count, hourly),
    }


def _teardown(api: str, count: int, hourly: float | None) -> dict[str, Any]:
    """What a job pays after its program ends: the toolkit's sleeps on every instance, or
    with ModelTrainer's driver, up to one 30 s poll of the workers (none on one instance)."""
    seconds = TEARDOWN_S if api == "estimator" else (DRIVER_POLL_S if count > 1 else 0)
    cost = None if hourly is None else round(hourly * seconds / 3600.0, 4)
    return {"teardown_s_per_instance": seconds, "teardown_cost": cost, "teardown_by": api}


def describe(est: dict[str, Any]) -> str:
    """One line for a dry run, e.g. ``3 x ml.c5.2xlarge in us-west-2: ~$1.22/h, ...``."""
    head = f"{est['count']} x {est['instance_type']} in {est['region']}"
    if est["price_per_hour"] is None:
        return f"cost: {head}: unknown ({est['note']})"
    return (
        f"cost (estimate, on-demand prices as of {est['as_of']}): {head}: "
        f"~${est['price_per_hour']:.2f}/h; at most ~${est['max_cost']:.2f} "
        f"if it runs the full max run of {est['max_run_s']:.0f} s"
    )


def teardown_line(est: dict[str, Any]) -> str:
    """The teardown every job pays whatever its program does: the toolkit's, or that of
    ModelTrainer's MPI driver."""
    if est.get("teardown_by") == "model-trainer":
        return _driver_teardown_line(est)
    text = (
        f"teardown: >= {est['teardown_s_per_instance']} s per instance after your program ends "
        "(the container toolkit's waits)"
    )
    if est.get("teardown_cost") is not None:
        text += f", at least ~${est['teardown_cost']:.4f} for {est['count']} instance(s)"
    return text


def _driver_teardown_line(est: dict[str, Any]) -> str:
    if est["teardown_s_per_instance"] == 0:
        return "teardown: none (ModelTrainer's MPI driver on one instance ends when mpirun does)"
    text = (
        f"teardown: up to {est['teardown_s_per_instance']} s after your program ends (the "
        "workers of ModelTrainer's MPI driver look for algo-1's status file every "
        f"{DRIVER_POLL_S} s)"
    )
    if est.get("teardown_cost") is not None:
        text += f", up to ~${est['teardown_cost']:.4f} for {est['count']} instance(s)"
    return text
