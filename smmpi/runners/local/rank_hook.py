"""Every rank's ``sitecustomize``: arm a stack dump on SIGUSR1, record the rank's pid, and
record the exception that ends the rank.

Local runs copy this file to ``<run dir>/.smmpi/site/sitecustomize.py``, first
on every rank's PYTHONPATH, so a hung run can show each rank's Python stack,
no rank can be missed at cleanup, and a failed run names the exception that
reached the top of a rank's program (``rank-R.exc``: not a traceback the
program caught and printed itself). It does nothing unless loaded as
``sitecustomize`` (importing it from smmpi is harmless), and it then runs the
next ``sitecustomize.py`` on ``sys.path``, as Python would have without it.
"""

from __future__ import annotations

import faulthandler
import json
import os
import signal
import sys
import time
from collections.abc import Callable
from types import TracebackType
from typing import IO, Any

_stack_file: IO[str] | None = None  # kept open: faulthandler writes to it on SIGUSR1


def arm(stack_dir: str | None, rank: str | None) -> None:
    """Record this rank's pid once and register the stack dump (a rank's children skip it)."""
    global _stack_file
    if not stack_dir or rank is None:
        return
    try:
        fd = os.open(
            os.path.join(stack_dir, f"rank-{rank}.pid"), os.O_WRONLY | os.O_CREAT | os.O_EXCL
        )
    except OSError:
        return  # a child process of the rank: the rank itself is already armed
    os.write(fd, str(os.getpid()).encode())
    os.close(fd)
    _stack_file = open(os.path.join(stack_dir, f"rank-{rank}.stack"), "w")
    faulthandler.register(signal.SIGUSR1, file=_stack_file, all_threads=True)
    sys.excepthook = _recording(sys.excepthook, os.path.join(stack_dir, f"rank-{rank}.exc"))


def exception_line(kind: type[BaseException], value: BaseException) -> str:
    """``ValueError: boom``: the line Python ends a traceback with (its first line only)."""
    import traceback

    parts = traceback.format_exception_only(kind, value)
    line = next((p for p in parts if p[:1] not in (" ", "\t")), parts[-1])
    return (line.strip().splitlines() or [kind.__name__])[0]


ExceptHook = Callable[[type[BaseException], BaseException, TracebackType | None], Any]


def _recording(after: ExceptHook, path: str) -> ExceptHook:
    """An excepthook that records the exception in ``path``, then calls ``after``."""

    def hook(kind: type[BaseException], value: BaseException, tb: TracebackType | None) -> None:
        try:
            with open(path + ".tmp", "w", encoding="utf-8") as f:
                json.dump({"text": exception_line(kind, value), "time": time.time()}, f)
            os.replace(path + ".tmp", path)
        except Exception:  # never let the record hide the traceback
            pass
        after(kind, value, tb)

    return hook


def chain(here: str) -> None:
    """Run the next ``sitecustomize.py`` on ``sys.path`` (this file shadows it)."""
    for entry in sys.path:
        candidate = os.path.join(entry or ".", "sitecustomize.py")
        if os.path.abspath(entry or ".") != here and os.path.isfile(candidate):
            with open(candidate) as f:
                code = compile(f.read(), candidate, "exec")
            exec(code, {"__name__": "sitecustomize", "__file__": candidate})
            break


if __name__ == "sitecustomize":
    arm(
        os.environ.get("SMMPI_STACK_DIR"),
        os.environ.get("OMPI_COMM_WORLD_RANK") or os.environ.get("PMI_RANK"),
    )
    chain(os.path.dirname(os.path.abspath(__file__)))
