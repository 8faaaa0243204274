"""The runner seam: run options checked when built, and progress through a callback."""

from __future__ import annotations

import io

import pytest

from smmpi.errors import BadInput
from smmpi.runners.base import RunOptions, silent, writer
from smmpi.spec.limits import TIMEOUT_RULE


def test_a_timeout_is_checked_whoever_builds_the_options() -> None:
    assert RunOptions(timeout=60).timeout == 60 and RunOptions().timeout is None
    for bad in (0, -1, 1e-9, 1e30, float("nan")):
        with pytest.raises(BadInput) as refused:
            RunOptions(timeout=bad)
        assert str(refused.value) == f"invalid timeout: {bad!r}; allowed: {TIMEOUT_RULE}"


def test_progress_goes_to_its_callback_one_line_at_a_time() -> None:
    stream = io.StringIO()
    say = writer(stream)
    say("smmpi: one")
    say("smmpi: two")
    assert stream.getvalue() == "smmpi: one\nsmmpi: two\n"
    assert silent("smmpi: dropped") is None
    assert RunOptions().progress is silent  # no runner writes to a terminal by itself
