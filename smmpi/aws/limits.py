"""CreateTrainingJob's own limits, read from botocore's SageMaker service model.

botocore checks a request's types and minimum lengths before sending it, but
not the maximums: SageMaker refuses an over-long hyperparameter only after
the source dir was uploaded. These numbers come from the model the SDK ships
(``HyperParameters`` max 100 entries, values max 2,500 characters,
``InputDataConfig`` max 20 channels, ``Tags`` max 50, ``Environment`` max 100
entries of 512 characters), so they follow the service when botocore does.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from typing import Any

from smmpi.errors import BadInput

#: Hyperparameters the SDK's framework estimators add to every MPI job
#: (sagemaker_program, sagemaker_submit_directory, sagemaker_container_log_level,
#: sagemaker_job_name, sagemaker_region and the three sagemaker_mpi_* ones), plus
#: TensorFlow's model_dir. Tests pin these counts against the installed SDK.
SDK_HYPERPARAMETERS = {"tensorflow": 9, "pytorch": 8}


@dataclass(frozen=True)
class Limits:
    hyperparameters: int
    hyperparameter_key: int
    hyperparameter_value: int
    channels: int
    tags: int
    environment: int
    environment_key: int
    environment_value: int


@functools.lru_cache(maxsize=1)
def limits() -> Limits:
    """The limits as botocore's model states them."""
    from smmpi.aws.facts import service_model

    shapes = service_model("sagemaker")["shapes"]
    members = shapes["CreateTrainingJobRequest"]["members"]

    def most(name: str) -> int:
        return int(shapes[name]["max"])

    def of(member: str) -> int:
        return most(members[member]["shape"])

    return Limits(
        hyperparameters=of("HyperParameters"),
        hyperparameter_key=most("HyperParameterKey"),
        hyperparameter_value=most("HyperParameterValue"),
        channels=of("InputDataConfig"),
        tags=of("Tags"),
        environment=of("Environment"),
        environment_key=most("TrainingEnvironmentKey"),
        environment_value=most("TrainingEnvironmentValue"),
    )


def check_hyperparameters(hyperparameters: dict[str, str], framework: str) -> None:
    """Refuse what SageMaker would refuse once the SDK JSON-encodes each value."""
    lim = limits()
    room = lim.hyperparameters - SDK_HYPERPARAMETERS.get(framework, 9)
    if len(hyperparameters) > room:
        raise BadInput(
            "hyperparameters",
            len(hyperparameters),
            f"at most {room} (SageMaker takes {lim.hyperparameters} hyperparameters and the "
            f"SDK adds {lim.hyperparameters - room} of its own)",
        )
    for key, value in hyperparameters.items():
        if len(key) > lim.hyperparameter_key:
            raise BadInput(
                "hyperparameter",
                key[:40] + "...",
                f"a name of 1-{lim.hyperparameter_key} characters",
            )
        sent = len(json.dumps(value))
        if sent > lim.hyperparameter_value:
            raise BadInput(
                f"hyperparameter {key}",
                f"{value[:20]}... ({len(value)} characters)",
                f"a value of at most {lim.hyperparameter_value} characters as sent "
                f"(the SDK JSON-quotes it: {sent} here)",
            )


def check_count(field: str, items: dict[str, Any], most: int, own: int = 0) -> None:
    """At most ``most`` entries, of which smmpi itself adds ``own``."""
    if len(items) + own > most:
        extra = f" (SageMaker takes {most}; smmpi adds {own} of its own)" if own else ""
        raise BadInput(field, len(items), f"at most {most - own}{extra}")
