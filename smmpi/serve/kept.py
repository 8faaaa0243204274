"""An ended job's log events, kept on disk and read when moto reads them.

moto's Logs backend holds a stream's events as a list of ``LogEvent`` objects,
which every operation (GetLogEvents, FilterLogEvents, DescribeLogStreams,
Insights queries, live tail) reads through ``stream.events``. For a stream
whose job has ended, :func:`keep` puts a :class:`KeptEvents` there instead: a
sequence of the same events that reads the stream's file
(``STATE/logs/JOB/algo-k.jsonl``) each time it is read, so moto answers exactly
as before while memory holds no event of an ended job. What DescribeLogStreams
shows without reading the events (first and last timestamps, bytes, last
ingestion time, creation time) is kept in the job's ``streams.json`` as the
stream's summary; from it and the file, :mod:`.coldstreams` makes the stream
itself again whenever it is read.

Each line of a stream's file is ``[timestamp, message, ingestion time, event id]``
(files written before ingestion times and ids were kept have the first two:
their events are given the timestamp as ingestion time and ids of their own).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, overload


def _event_class() -> Any:
    from moto.logs.models import LogEvent

    return LogEvent


def line(event: Any) -> str:
    """The file's line for moto's ``event``."""
    return json.dumps([event.timestamp, event.message, event.ingestion_time, event.event_id]) + "\n"


def _read(path: Path | str) -> Iterator[list[Any]]:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except FileNotFoundError:
        return
    with os.fdopen(fd, encoding="utf-8", errors="surrogateescape") as f:
        for text in f:
            try:
                found = json.loads(text)
            except ValueError:
                continue  # a line cut short by a kill
            if isinstance(found, list) and len(found) >= 2:
                yield found


class KeptEvents(Sequence[Any]):
    """A stream's events, read from its file whenever moto reads them.

    Adding to it (a client's PutLogEvents to an ended job's stream) gives moto a
    plain list again, with every event: the stream is then held in memory, as
    any stream moto holds.
    """

    def __init__(self, stream: Any, path: Path, count: int, first_id: int) -> None:
        self.stream, self.path, self.size, self.first_id = stream, str(path), count, first_id

    def _load(self) -> list[Any]:
        event_class = _event_class()
        events = []
        for index, found in enumerate(_read(self.path)):
            event = object.__new__(event_class)  # as moto made it, without a new id
            event.timestamp, event.message = found[0], found[1]
            event.ingestion_time = found[2] if len(found) > 3 else found[0]
            event.event_id = found[3] if len(found) > 3 else self.first_id + index
            events.append(event)
        return events

    def __len__(self) -> int:
        return self.size

    def __bool__(self) -> bool:
        return self.size > 0

    def __iter__(self) -> Iterator[Any]:
        return iter(self._load())

    @overload
    def __getitem__(self, index: int) -> Any: ...

    @overload
    def __getitem__(self, index: slice) -> list[Any]: ...

    def __getitem__(self, index: int | slice) -> Any:
        return self._load()[index]

    def __iadd__(self, more: Any) -> list[Any]:  # type: ignore[misc]
        self.stream.__dict__.pop("_update", None)  # its first and last event are moto's again
        return [*self._load(), *more]

    def __add__(self, more: Any) -> list[Any]:
        return [*self._load(), *more]


def summary_of(stream: Any) -> dict[str, Any]:
    """What DescribeLogStreams shows of moto's ``stream`` beyond its name and creation."""
    from moto.core.utils import unix_time_millis

    events = stream.events
    ingestion = stream.last_ingestion_time
    return {
        "count": len(events),
        "first": min((e.timestamp for e in events), default=None),
        "last": max((e.timestamp for e in events), default=None),
        "bytes": stream.stored_bytes,
        "ingestion": unix_time_millis(ingestion) if ingestion is not None else None,
        "token": stream.upload_sequence_token,
        "next_id": max((e.event_id for e in events), default=-1) + 1,
        "created": unix_time_millis(stream.creation_time),
    }


def summary_of_file(path: Path) -> dict[str, Any]:
    """The same summary, from a stream's file (a job that never ended, or kept before)."""
    count, stored, ids = 0, 0, -1
    first: int | None = None
    last: int | None = None
    ingestion: float | None = None
    for found in _read(path):
        count += 1
        stamp = found[0]
        first = stamp if first is None else min(first, stamp)
        last = stamp if last is None else max(last, stamp)
        stored += len(found[1])
        at = found[2] if len(found) > 3 else stamp
        ingestion = at if ingestion is None else max(ingestion, at)
        ids = max(ids, found[3] if len(found) > 3 else -1)
    return {"count": count, "first": first, "last": last, "bytes": stored,
            "ingestion": ingestion, "token": 1 if count else 0, "next_id": ids + 1}  # fmt: skip


def _unchanged() -> None:
    """A kept stream's first and last timestamps are its summary's."""


def reserve(summary: dict[str, Any]) -> None:
    """No event moto makes from now on gets the id of one of the stream's events (those kept
    without an id are given ``first_id`` onwards, kept in the summary)."""
    event_class = _event_class()
    summary.setdefault("first_id", event_class._event_id)
    event_class._event_id = max(
        event_class._event_id, summary["first_id"] + summary["count"], summary["next_id"]
    )


def keep(stream: Any, path: Path, summary: dict[str, Any]) -> None:
    """From now on, moto reads ``stream``'s events from ``path``."""
    reserve(summary)
    attach(stream, path, summary)


def attach(stream: Any, path: Path, summary: dict[str, Any]) -> None:
    """``stream`` reads its events from ``path`` and shows ``summary`` (ids reserved)."""
    from moto.core.utils import utcfromtimestamp

    stream.events = KeptEvents(stream, path, summary["count"], summary.get("first_id", 0))
    stream.first_event_timestamp, stream.last_event_timestamp = summary["first"], summary["last"]
    stream._update = _unchanged  # moto would read every event for the two above
    stream.stored_bytes = summary["bytes"]
    stream.upload_sequence_token = summary["token"]
    if summary["ingestion"] is not None:
        stream.last_ingestion_time = utcfromtimestamp(summary["ingestion"] / 1000)
