"""The SageMaker SDK kept imported between commands: ``SMMPI_WARM_SDK=SECONDS``.

Importing the SDK is most of what ``submit --dry-run`` and ``submit --local`` spend before their
job runs (about 1.5 CPU seconds of a 2-core machine, every time). With ``SMMPI_WARM_SDK=S`` a
keeper (:mod:`smmpi.sdk.keeper`) imports it once and forks a child for every request it builds:
the child takes the command's working folder, environment, umask and standard streams, runs the
very function the command would run without it (:func:`smmpi.sdk.estimator.build_offline`,
:func:`smmpi.sdk.model_trainer.capture_here`), and sends back what it returned or raised. Nothing
is built in the keeper itself, so no build sees another's state. The keeper ends S seconds after
its last build, at ``smmpi run --keep-warm 0``, or when its socket is removed.

A keeper serves only commands of its own Python, smmpi files and installs of the SDK, botocore
and boto3 (its socket's name is their digest). When there is none, or it cannot answer, the
command builds its request itself and says so in one line.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import pickle
import socket
import struct
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

from smmpi import keepers
from smmpi.bounded import ascii_int
from smmpi.errors import BadInput, SmmpiError
from smmpi.spec.secrets import CREDENTIAL_NAMES, CREDENTIAL_PREFIXES

P = ParamSpec("P")
T = TypeVar("T")

ENV = "SMMPI_WARM_SDK"
LIMIT = 3600
FRAME = struct.Struct("!Q")
#: What a build runs besides smmpi: a keeper serves only commands with the same installs
LIBRARIES = ("sagemaker", "sagemaker_core", "botocore", "boto3")
_ROOT = Path(__file__).resolve().parents[2]
_BOOT = (
    "import sys; sys.path[0] = sys.argv[1]; "  # (not its working folder: a build's is the user's)
    "from smmpi.sdk.keeper import main; sys.exit(main(sys.argv[2:]))"
)


def requested() -> int:
    """``SMMPI_WARM_SDK``: whole seconds from 0 (none kept, the default) to 3600."""
    text = os.environ.get(ENV, "").strip() or "0"
    value = ascii_int(text)
    if value is None or not 0 <= value <= LIMIT:
        raise BadInput(ENV, os.environ.get(ENV), f"whole seconds from 0 to {LIMIT}")
    return value


def key() -> str:
    """The keeper's name: a digest of this Python, smmpi's files and the installs of the SDK
    and what it builds with (:data:`LIBRARIES`)."""
    digest = hashlib.sha256(f"{sys.prefix}:{os.path.realpath(sys.executable)}".encode())
    package = _ROOT / "smmpi"
    for path in sorted(package.rglob("*.py")):
        info = path.stat()
        digest.update(f"{path.relative_to(package)}:{info.st_mtime_ns}:{info.st_size};".encode())
    for name in LIBRARIES:
        spec = importlib.util.find_spec(name)
        if spec is None or spec.origin is None:
            raise keepers.Refused(f"{name} is not installed")
        info = os.stat(spec.origin)
        digest.update(f"{spec.origin}:{info.st_mtime_ns};".encode())
    return "sdk-" + digest.hexdigest()[:20]


def send_frame(sock: socket.socket, value: Any, fds: tuple[int, ...] = ()) -> None:
    data = pickle.dumps(value)
    if fds:
        socket.send_fds(sock, [FRAME.pack(len(data))], list(fds))
    else:
        sock.sendall(FRAME.pack(len(data)))
    sock.sendall(data)


def recv_frame(sock: socket.socket, fds: int = 0) -> tuple[Any, list[int]]:
    """A frame (and the descriptors sent with it): only ever from this user's own processes."""
    head, got, _, _ = socket.recv_fds(sock, FRAME.size, fds)
    while len(head) < FRAME.size:
        more = sock.recv(FRAME.size - len(head))
        if not more:
            raise ConnectionError("the other end closed the connection")
        head += more
    size, chunks = FRAME.unpack(head)[0], []
    while size:
        chunk = sock.recv(min(size, 1 << 20))
        if not chunk:
            raise ConnectionError("the other end closed the connection")
        chunks.append(chunk)
        size -= len(chunk)
    return pickle.loads(b"".join(chunks)), got


def connect(seconds: int) -> socket.socket:
    """A connection to the kept SDK of this Python and smmpi, started if there is none."""
    where = keepers.folder(sub="sdk")
    name = key()
    path = where / f"{name}.sock"
    sock = keepers.connect(path)
    if sock is None:
        argv = [sys.executable, "-c", _BOOT, str(_ROOT), str(where), name, str(seconds)]
        env = {  # (each build takes the command's own environment)
            k: v
            for k, v in os.environ.items()
            if k not in CREDENTIAL_NAMES and not k.startswith(CREDENTIAL_PREFIXES)
        }
        keepers.start(argv, env, name)
        sock = keepers.connect(path)
    if sock is None:
        raise keepers.Refused(f"the keeper of {name} does not answer")
    if keepers.peer_uid(sock) != os.getuid():
        sock.close()
        raise keepers.Refused(f"the keeper of {name} is not this user's")
    return sock


def _is_open(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True


def call(fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T | None:
    """``fn(*args, **kwargs)`` (a module's function), run by the kept SDK in a child of its own
    with this command's working folder, environment, umask and standard streams; None when no
    SDK is kept (``SMMPI_WARM_SDK`` unset or 0) or the keeper cannot answer (one line says so:
    the command then runs it itself). What ``fn`` raises is raised here."""
    seconds = requested()
    if not seconds:
        return None
    umask = os.umask(0o22)
    os.umask(umask)
    try:
        with connect(seconds) as sock:
            sock.sendall(b"build\n")
            streams = tuple(fd for fd in (0, 1, 2) if _is_open(fd))
            question = (os.getcwd(), dict(os.environ), umask, streams, fn, args, kwargs)
            send_frame(sock, question, streams)
            (outcome, value), _ = recv_frame(sock)
    except (OSError, EOFError, pickle.PickleError, keepers.Refused) as err:
        print(f"smmpi: {ENV}: {err}; the SDK is imported here", file=sys.stderr)
        return None
    if outcome == "ok":
        return value  # type: ignore[no-any-return]
    if isinstance(value, BaseException):
        raise value
    message, code = value
    error = SmmpiError(message)
    error.exit_code = code
    raise error


def run(fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    """``fn(*args, **kwargs)``: by the kept SDK (:func:`call`) when there is one, else here."""
    there = call(fn, *args, **kwargs)
    return there if there is not None else fn(*args, **kwargs)
