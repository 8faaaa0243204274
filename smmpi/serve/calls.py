"""One request to a moto service as serve's journal keeps it, and the operation it names."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import parse_qs

_MAX_ACTION = 128


@dataclass(frozen=True)
class Call:
    """One request to a moto service, as the journal keeps it."""

    service: str
    region: str
    method: str
    path: str  # raw, as sent
    query: str
    content_type: str
    target: str  # X-Amz-Target (JSON protocols), or ""
    body: bytes
    seed: int | None = None  # moto's random generator's seed while it answered


def operation(call: Call) -> str:
    """The operation a request names: X-Amz-Target's, else the query protocols' Action."""
    if call.target:
        return call.target.rpartition(".")[2][:_MAX_ACTION]
    found = parse_qs(call.query).get("Action")
    if not found and call.content_type.startswith("application/x-www-form-urlencoded"):
        found = parse_qs(call.body.decode("utf-8", "replace")).get("Action")
    return (found or [""])[0][:_MAX_ACTION]
