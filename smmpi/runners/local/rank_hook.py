"""Every rank's ``sitecustomize``: arm a stack dump on SIGUSR1 and record the rank's pid.

Local runs copy this file to ``<run dir>/.smmpi/site/sitecustomize.py``, first
on every rank's PYTHONPATH, so a hung run can show each rank's Python stack
and no rank can be missed at cleanup. It does nothing unless loaded as
``sitecustomize`` (importing it from smmpi is harmless), and it then runs the
next ``sitecustomize.py`` on ``sys.path``, as Python would have without it.
"""

from __future__ import annotations

import faulthandler
import os
import signal
import sys
from typing import IO

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
