"""CreateTrainingJob limits from botocore's model; the SDK's own hyperparameters counted."""

from __future__ import annotations

import pytest

from smmpi.aws.limits import SDK_HYPERPARAMETERS, limits


def test_limits_are_the_service_models() -> None:
    lim = limits()
    assert (lim.hyperparameters, lim.hyperparameter_value, lim.hyperparameter_key) == (
        100,
        2500,
        256,
    )
    assert (lim.channels, lim.tags) == (20, 50)
    assert (lim.environment, lim.environment_key, lim.environment_value) == (100, 512, 512)


@pytest.mark.parametrize("framework", sorted(SDK_HYPERPARAMETERS))
def test_the_sdk_adds_the_hyperparameters_counted_for_it(framework: str) -> None:
    """The room left for a user's hyperparameters is right only if this count is the SDK's."""
    from smmpi.api import plan
    from smmpi.spec import MPIJob

    request = plan(MPIJob("demo", instances=2, ppn=2, framework=framework)).request
    assert len(request["HyperParameters"]) == SDK_HYPERPARAMETERS[framework]


def test_the_most_hyperparameters_sagemaker_takes_fit_in_the_request() -> None:
    from smmpi.api import plan
    from smmpi.spec import MPIJob

    room = limits().hyperparameters - SDK_HYPERPARAMETERS["tensorflow"]
    job = MPIJob("demo", hyperparameters={f"h{i}": "1" for i in range(room)})
    assert len(plan(job).request["HyperParameters"]) == limits().hyperparameters
