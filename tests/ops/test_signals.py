"""``held``: a step Ctrl-C or SIGTERM never cuts in two; the signal is delivered at its end."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator

import pytest

from smmpi.ops.signals import held


@pytest.fixture
def sigterm_interrupts() -> Iterator[None]:
    def on_term(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, on_term)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_inside_waits_for_the_end_of_the_step(
    signum: int, sigterm_interrupts: None
) -> None:
    steps = []
    with pytest.raises(KeyboardInterrupt):
        with held():
            steps.append("first")
            os.kill(os.getpid(), signum)
            steps.append("second")  # not cut off: the step ends whole
        steps.append("after")  # never: the interrupt ends what comes next
    assert steps == ["first", "second"]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_without_a_signal_nothing_is_raised_and_handlers_are_restored(
    sigterm_interrupts: None,
) -> None:
    before = signal.getsignal(signal.SIGTERM)
    with held():
        pass
    assert signal.getsignal(signal.SIGTERM) is before


def test_in_another_thread_the_step_runs_as_it_is() -> None:
    seen: list[object] = []

    def step() -> None:
        with held():
            seen.append(signal.getsignal(signal.SIGINT))

    worker = threading.Thread(target=step)
    worker.start()
    worker.join(timeout=30)
    assert seen == [signal.default_int_handler]
