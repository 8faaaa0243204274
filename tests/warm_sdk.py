"""The SageMaker SDK kept imported for a test run (``SMMPI_WARM_SDK``, smmpi/sdk/warm.py).

Most of the suite's commands build a request through the SDK; importing it is 1.5 CPU seconds
each time. A run's first process (not a pytest-xdist worker) starts one keeper, in a folder of
the run's own, before any test, and ends it at the run's end; :func:`tests.helpers.base_env`
points every command at it. tests/sdk/test_warm.py checks that a kept SDK builds the very
request a command builds by itself.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import time
from pathlib import Path

FOLDER = "SMMPI_TESTS_WARM_DIR"
PREFIX = "smmpi-tests-warm-"
SECONDS = "3600"  # ended at the run's end; this is the bound if that never comes


def start() -> None:
    """Make the run's folder and start its keeper; folders of runs that are gone are removed
    (their keepers end when their socket goes)."""
    shared = Path(tempfile.gettempdir())
    for stale in shared.glob(f"{PREFIX}*"):
        if not os.path.exists(f"/proc/{stale.name.removeprefix(PREFIX)}"):
            shutil.rmtree(stale, ignore_errors=True)
    folder = shared / f"{PREFIX}{os.getpid()}"
    folder.mkdir(mode=0o700)
    os.environ[FOLDER] = str(folder)
    from smmpi import keepers
    from smmpi.sdk import warm

    saved = {name: os.environ.get(name) for name in ("SMMPI_WARM_DIR", warm.ENV)}
    os.environ.update(SMMPI_WARM_DIR=str(folder), **{warm.ENV: SECONDS})
    try:
        warm.connect(int(SECONDS)).close()
    except (OSError, keepers.Refused):
        pass  # each command then starts it, or builds its request itself and says so
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def end() -> None:
    """At the run's end, in the process that started it: its keeper ends with its socket."""
    folder = os.environ.get(FOLDER, "")
    if folder.endswith(f"/{PREFIX}{os.getpid()}"):
        from smmpi import keepers

        for path in Path(folder).glob("sdk/*.sock"):
            with contextlib.suppress(OSError, keepers.Refused):
                _end(path)
        shutil.rmtree(folder, ignore_errors=True)


def _end(path: Path) -> None:
    """End the keeper at ``path`` and wait for it (this process started it: it reaps it)."""
    from smmpi import keepers

    sock = keepers.connect(path)
    if sock is None:
        return
    with sock:
        pid = keepers.peer_pid(sock)
    keepers.tell(path)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            if os.waitpid(pid, os.WNOHANG)[0] == pid:
                return
        except ChildProcessError:  # not this process's child
            return
        time.sleep(0.05)


def env() -> dict[str, str]:
    """What a command's environment needs to use the run's keeper (nothing outside a run)."""
    folder = os.environ.get(FOLDER)
    return {"SMMPI_WARM_DIR": folder, "SMMPI_WARM_SDK": SECONDS} if folder else {}
