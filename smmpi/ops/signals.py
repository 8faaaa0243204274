"""Steps that Ctrl-C or SIGTERM never cuts in two (a local job's folder made, recorded, removed).

A SIGINT or SIGTERM that comes during such a step waits for its end, and is then delivered
again to the handler that was there before (Ctrl-C's ``KeyboardInterrupt``, or smmpi's
SIGTERM-as-Ctrl-C), so the step is done whole or not at all, and the interrupt still ends
the command. Python runs signal handlers in the main thread only: in another thread, or
under a handler Python did not install, the step runs as it is.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator

STOPS = (signal.SIGINT, signal.SIGTERM)


@contextlib.contextmanager
def held() -> Iterator[None]:
    """Inside, SIGINT and SIGTERM wait; on leaving, the first that came is raised again."""
    previous = {signum: signal.getsignal(signum) for signum in STOPS}
    if threading.current_thread() is not threading.main_thread() or None in previous.values():
        yield
        return
    came: list[int] = []

    def hold(signum: int, frame: object) -> None:
        came.append(signum)

    for signum in STOPS:
        signal.signal(signum, hold)
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        if came:
            signal.raise_signal(came[0])  # the previous handler's turn (it runs here)
