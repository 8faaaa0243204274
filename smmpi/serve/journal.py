"""What clients wrote to IAM, CloudFormation and CloudWatch Logs, kept to be replayed at start.

moto keeps these services in memory. serve appends every request that changed
one of them (an operation that is not a read, answered 2xx) to
``STATE/moto/journal.jsonl`` (0600, opened without following a link), and at
the next start replays them, in order, into moto's fresh backends: roles and
policies, stacks (and what their templates made), log groups, streams and
events come back. Names in a request never become paths; only the journal's
own name is a file.

moto draws every id it makes (a role's ``RoleId``, a stack's ``StackId``...) from
one random generator. Each kept request is answered with that generator seeded
by a number of its own, kept with it, and replayed with the same seed: a
resource gets the same ids after a restart (its creation time is the replay's).

At start, the journal is compacted before it is replayed (:mod:`.compact`):
what a later delete undid (a role, user, group or instance profile and every
request about it, a stack, a log group or stream and their events) is dropped.
"""

from __future__ import annotations

import base64
import contextlib
import io
import json
import os
import secrets
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from smmpi.serve.calls import Call, operation
from smmpi.serve.state import subfolder, write_private

SERVICES = frozenset({"iam", "cloudformation", "logs"})
_READS = ("Describe", "Get", "List", "Filter", "Validate", "Estimate", "Simulate", "Test",
          "StartQuery", "StopQuery")  # fmt: skip


_SEEDED = threading.Lock()


def new_seed() -> int:
    return secrets.randbits(63)


@contextlib.contextmanager
def seeded(seed: int | None) -> Iterator[None]:
    """moto's ids drawn from a generator seeded with ``seed`` (then from fresh entropy again)."""
    if seed is None:
        yield
        return
    from moto.moto_api._internal import mock_random

    with _SEEDED:
        mock_random.seed(seed)
        try:
            yield
        finally:
            mock_random.seed()  # the next ids are unpredictable again


def changes(call: Call) -> bool:
    """Whether this request may change what the service holds (so it is kept)."""
    if call.service not in SERVICES:
        return False
    name = operation(call)
    return bool(name) and not name.startswith(_READS)


def _environ(call: Call) -> dict[str, Any]:
    scope = f"SMMPIJOURNAL/20000101/{call.region}/{call.service}/aws4_request"
    environ: dict[str, Any] = {
        "REQUEST_METHOD": call.method,
        "SCRIPT_NAME": "",
        "PATH_INFO": unquote(call.path),
        "QUERY_STRING": call.query,
        "RAW_URI": call.path + (f"?{call.query}" if call.query else ""),
        "SERVER_NAME": "127.0.0.1",
        "SERVER_PORT": "0",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "HTTP_HOST": "127.0.0.1",
        "HTTP_AUTHORIZATION": f"AWS4-HMAC-SHA256 Credential={scope}, SignedHeaders=host, "
        f"Signature={'0' * 64}",
        "CONTENT_LENGTH": str(len(call.body)),
        "wsgi.version": (1, 0),
        "wsgi.url_scheme": "http",
        "wsgi.input": io.BytesIO(call.body),
        "wsgi.errors": sys.stderr,
        "wsgi.multithread": True,
        "wsgi.multiprocess": False,
        "wsgi.run_once": False,
    }
    if call.content_type:
        environ["CONTENT_TYPE"] = call.content_type
    if call.target:
        environ["HTTP_X_AMZ_TARGET"] = call.target
    return environ


class Journal:
    """The kept requests: appended as clients make them, replayed at start."""

    def __init__(self, root: Path) -> None:
        self.path = subfolder(root, "moto") / "journal.jsonl"
        self.lock = threading.Lock()

    def append(self, call: Call) -> None:
        line = _line(call)
        with self.lock:
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o600)
            with os.fdopen(fd, "a", encoding="utf-8") as f:
                f.write(line)

    def entries(self) -> list[Call]:
        """The kept requests, in order (a line cut short by a kill is skipped)."""
        if not self.path.is_file():
            return []
        found = []
        fd = os.open(self.path, os.O_RDONLY | os.O_NOFOLLOW)
        with os.fdopen(fd, encoding="utf-8") as f:
            for line in f:
                try:
                    entry = json.loads(line)
                    call = Call(**{**entry, "body": base64.b64decode(entry["body"])})
                except (ValueError, TypeError, KeyError):
                    continue
                if call.service in SERVICES:
                    found.append(call)
        return found

    def compact(self) -> int:
        """Drop what later deletes undid (:func:`.compact.undone`); how many were dropped."""
        from smmpi.serve.compact import undone

        with self.lock:
            calls = self.entries()
            dropped = undone(calls)
            if dropped:
                kept = [_line(c) for i, c in enumerate(calls) if i not in dropped]
                write_private(self.path, "".join(kept).encode())
        return len(dropped)

    def replay(self, app_for: Callable[[str], Any]) -> int:
        """Send every kept request to moto's app for its service again; how many were."""
        count = 0
        for call in self.entries():
            with seeded(call.seed):
                answer = app_for(call.service)(_environ(call), lambda *args: None)
                for _ in answer:
                    pass
                getattr(answer, "close", lambda: None)()
            count += 1
        return count


def _line(call: Call) -> str:
    return json.dumps({**call.__dict__, "body": base64.b64encode(call.body).decode()}) + "\n"
