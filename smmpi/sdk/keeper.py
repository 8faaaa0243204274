"""The keeper of the imported SageMaker SDK (``SMMPI_WARM_SDK``; :mod:`smmpi.sdk.warm` starts it).

``python -c BOOT ROOT FOLDER KEY SECONDS FD`` imports the SDK and what a build uses, listens on
``FOLDER/KEY.sock`` (0600, in a 0700 folder) and says ``ok`` on descriptor FD. A command of the
same user sends ``build``, then its working folder, environment, umask and a call (a module's
function and its arguments), with its standard streams: a child forked for that one call takes
them all, makes the call (:func:`smmpi.sdk.estimator.build_offline`, for one) and answers with
what it returned or raised. ``end`` ends the keeper. It also ends SECONDS after its last
build, on SIGTERM, SIGINT or SIGHUP, and when its socket is removed or taken by another keeper.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import selectors
import signal
import socket
import sys
import time
from pathlib import Path
from typing import Any, NoReturn

from smmpi import keepers
from smmpi.sdk.warm import recv_frame, send_frame

WARM_MODULES = (
    "sagemaker.pytorch",
    "sagemaker.tensorflow",
    "sagemaker.inputs",
    "smmpi.sdk.estimator",
)
LOOK_SECONDS = 1.0  # how often it looks whether its socket is still its own


def _warm_up() -> None:
    """What every build imports and parses, done once: the SDK, its two estimators, smmpi's
    builders, the API model botocore loads."""
    import importlib

    from smmpi.aws.facts import shared_loader
    from smmpi.sdk.session import import_sdk, share_default_session_loader

    import_sdk()
    for module in WARM_MODULES:
        importlib.import_module(module)
    shared_loader().load_service_model("sagemaker", "service-2")
    share_default_session_loader()


def _answer(error: BaseException) -> tuple[str, Any]:
    """The build's error as the command raises it: itself when it travels whole, else its line
    and exit code."""
    try:
        pickle.loads(pickle.dumps(error))
    except Exception:
        return "error", (str(error), int(getattr(error, "exit_code", 1)))
    return "error", error


def _take_streams(given: dict[int, int]) -> None:
    """The command's standard streams as this child's: those it has, and none it has not."""
    for target in (0, 1, 2):
        if target in given:
            os.dup2(given[target], target)
        else:
            with contextlib.suppress(OSError):
                os.close(target)
    for fd in given.values():
        if fd > 2:
            os.close(fd)


def _build(conn: socket.socket) -> NoReturn:
    """One build, in a child of the keeper's: the command's world, the request, the answer."""
    code = 0
    try:
        for signo in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(signo, signal.SIG_DFL)
        question, fds = recv_frame(conn, 3)
        cwd, env, umask, streams, fn, args, kwargs = question
        _take_streams(dict(zip(streams, fds, strict=True)))
        os.chdir(cwd)
        os.umask(umask)
        os.environ.clear()
        os.environ.update(env)
        try:
            answer: tuple[str, Any] = ("ok", fn(*args, **kwargs))
        except Exception as err:
            answer = _answer(err)
        sys.stdout.flush()
        sys.stderr.flush()
        send_frame(conn, answer)
    except BaseException:
        code = 1
    os._exit(code)


def _reap(running: set[int]) -> None:
    """Forget the builds that have ended."""
    for pid in list(running):
        with contextlib.suppress(ChildProcessError):
            if os.waitpid(pid, os.WNOHANG)[0] == 0:
                continue
        running.discard(pid)


def serve(listener: socket.socket, path: Path, inode: int, seconds: float) -> None:
    """Build on request until SECONDS after the last build, ``end``, or its socket is gone."""
    chooser = selectors.DefaultSelector()
    chooser.register(listener, selectors.EVENT_READ)
    running: set[int] = set()
    last = time.monotonic()
    while keepers.is_ours(path, inode):
        _reap(running)
        if running:
            last = time.monotonic()
        elif time.monotonic() - last >= seconds:
            return
        for _ in chooser.select(LOOK_SECONDS):
            conn, _ = listener.accept()
            with conn:
                asked = keepers.asked(conn)
                if asked == "end":
                    conn.sendall(b"ended\n")
                    return
                if asked == "build":
                    pid = os.fork()
                    if pid == 0:
                        listener.close()
                        _build(conn)
                    running.add(pid)
            last = time.monotonic()


def _ending(signo: int, _frame: object) -> None:
    raise SystemExit(128 + signo)


def main(argv: list[str]) -> int:
    """``FOLDER KEY SECONDS FD``: import the SDK, then build on request."""
    where, name, seconds, ready = argv[0], argv[1], float(argv[2]), int(argv[3])
    for signo in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signo, _ending)
    path = Path(where) / f"{name}.sock"
    try:
        _warm_up()
        os.umask(0o177)
        listener = keepers.listen(where, path.name)
        inode = os.lstat(path).st_ino
        os.write(ready, b"ok\n")
    except Exception as err:
        with contextlib.suppress(OSError):
            os.write(ready, f"{type(err).__name__}: {err}\n".encode())
        return 1
    os.close(ready)
    try:
        serve(listener, path, inode, seconds)
    finally:
        if keepers.is_ours(path, inode):
            with contextlib.suppress(OSError):
                os.unlink(path)
    return 0
