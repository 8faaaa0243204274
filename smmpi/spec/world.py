"""The world a job may ask for: instances and processes per instance, in every mode.

A request, its dry run and the container's mpirun line all list every host,
so an absurd ``instances`` would exhaust memory long before SageMaker could
refuse it. Every way in (``run``, ``submit`` in each mode, the Python API)
checks these bounds before anything is built:

- ``instances``: SageMaker's own range for ``ResourceConfig.InstanceCount``
  (botocore's ``TrainingInstanceCount``: at least 1 for a training job; the
  model gives no maximum), capped at :data:`MAX_INSTANCES`, far above any
  account's training-instance quota;
- ``ppn``: 1 to :data:`MAX_PPN`, above the vCPUs of the largest training
  instance (192).

A local run bounds the ranks further (``smmpi.runners.local.bounds``): one
machine runs them all.
"""

from __future__ import annotations

import functools

from smmpi.errors import BadInput
from smmpi.spec.checks import positive_int

MAX_INSTANCES = 512
MAX_PPN = 256


@functools.lru_cache(maxsize=1)
def instance_range() -> tuple[int, int]:
    """SageMaker's ``InstanceCount`` range for a training job, within smmpi's cap."""
    low, high = 1, MAX_INSTANCES
    try:
        from smmpi.aws.facts import service_model

        shapes = service_model("sagemaker")["shapes"]
    except ImportError:  # no botocore: smmpi's own bounds
        return low, high
    shape = shapes["TrainingInstanceCount"]
    low = max(low, int(shape.get("min", low)))
    high = min(high, int(shape.get("max", high)))
    return low, high


def check_instances(value: object) -> int:
    """``instances`` within SageMaker's range and smmpi's cap (one line if not)."""
    count = positive_int("instances", value)
    low, high = instance_range()
    if not low <= count <= high:
        raise BadInput("instances", count, f"an integer from {low} to {high}")
    return count


def check_ppn(value: object) -> int:
    """``ppn`` from 1 to :data:`MAX_PPN` (one line if not)."""
    return positive_int("ppn", value, MAX_PPN)
