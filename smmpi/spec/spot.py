"""Spot training's fields: ``use_spot``, ``max_wait`` and what spot rules out (warm pools)."""

from __future__ import annotations

from smmpi.errors import BadInput
from smmpi.spec.limits import run_seconds


def check_spot(use_spot: object, max_wait: object, keep_alive: object, max_run: int) -> int | None:
    """The job's ``max_wait``: ``max_run`` for a spot job that names none, None without spot.

    SageMaker refuses ``MaxWaitTimeInSeconds`` without spot, below ``MaxRuntimeInSeconds``,
    and a warm pool (``keep_alive``) with spot; each is one line here, before any call.
    """
    if not isinstance(use_spot, bool):
        raise BadInput("use_spot", use_spot, "True or False")
    wait = None if max_wait is None else run_seconds("max_wait", max_wait)
    if wait is not None and not use_spot:
        raise BadInput("max_wait", wait, "only with use_spot=True")
    if not use_spot:
        return wait
    if keep_alive:
        raise BadInput(
            "keep_alive",
            keep_alive,
            "0 or None with use_spot=True (warm pools do not support spot training)",
        )
    if wait is None:
        return max_run
    if wait < max_run:
        raise BadInput("max_wait", wait, f"seconds >= max_run ({max_run}) for spot training")
    return wait
