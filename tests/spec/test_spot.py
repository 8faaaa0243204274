"""Spot training's fields: ``max_wait`` follows ``max_run``; spot rules out warm pools."""

from __future__ import annotations

import pytest

from smmpi.errors import BadInput
from smmpi.spec.spot import check_spot


def test_a_spot_job_waits_at_least_as_long_as_it_runs() -> None:
    assert check_spot(False, None, None, 3600) is None
    assert check_spot(True, None, None, 3600) == 3600  # SageMaker needs one: max_run
    assert check_spot(True, 7200, 0, 3600) == 7200
    assert check_spot(True, "7200", None, 3600) == 7200  # the CLI's digits


@pytest.mark.parametrize(
    ("given", "line"),
    [
        (("yes", None, None), "invalid use_spot: 'yes'; allowed: True or False"),
        ((False, 7200, None), "invalid max_wait: 7200; allowed: only with use_spot=True"),
        ((True, 60, None), "invalid max_wait: 60; allowed: seconds >= max_run (3600)"),
        ((True, None, 300), "invalid keep_alive: 300; allowed: 0 or None with use_spot=True"),
        ((True, 0, None), "invalid max_wait: 0; allowed: "),
    ],
)
def test_what_sagemaker_would_refuse_is_one_line(given: tuple[object, ...], line: str) -> None:
    with pytest.raises(BadInput) as refused:
        check_spot(*given, 3600)
    assert str(refused.value).startswith(line)
