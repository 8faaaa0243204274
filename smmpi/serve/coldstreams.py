"""The training jobs' log group as moto holds it, with the streams of ended jobs on disk.

moto keeps a log group's streams as a dict of ``LogStream`` objects (its
``streams``). Serve puts a :class:`ColdStreams` in its place: once a job has
ended, each of its streams is held as the marker :data:`COLD`, and whatever
reads the stream (GetLogEvents, FilterLogEvents, DescribeLogStreams...) gets
a ``LogStream`` made from the job's ``streams.json`` (the stream's summary
and creation time) whose events are read from its file (:mod:`.kept`). Memory
keeps the stream's name only. The last :data:`RECENT` streams made are kept
made; one a client wrote to again (PutLogEvents, which makes its events a
list in memory, as moto holds any stream's) is held as moto holds it from then on.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from smmpi.serve import kept
from smmpi.serve.state import read_json

RECENT = 16  # streams made from their files and kept made (the last ones read)


class _Cold:
    """What the group's streams hold for an ended job's stream."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "COLD"


COLD = _Cold()


def _find(folder: Path, name: str) -> tuple[Path, dict[str, Any]] | None:
    """The events file and summary of stream ``name`` (``JOB/algo-k-EPOCH``), if kept."""
    job, _, _ = name.partition("/")
    index = folder / job / "streams.json"
    try:
        data = read_json(index) if job and job not in (".", "..") else None
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    for host, stream in (data.get("streams") or {}).items():
        summary = (data.get("kept") or {}).get(host)
        if stream == name and summary is not None and "created" in summary:
            return folder / job / f"{host}.jsonl", summary
    return None


class ColdStreams(dict):  # type: ignore[type-arg]
    """moto's ``LogGroup.streams``, with ended jobs' streams cold (made when read)."""

    def __init__(self, group: Any, folder: Path, streams: dict[str, Any]) -> None:
        super().__init__(streams)
        self.group, self.folder = group, folder
        self.recent: OrderedDict[str, Any] = OrderedDict()
        self.guard = threading.RLock()

    def _made(self, name: str, keep: bool) -> Any:
        with self.guard:
            found = self.recent.get(name)
            if found is not None:
                self.recent.move_to_end(name)
                return found
            where = _find(self.folder, name)
            if where is None:
                raise KeyError(name)
            stream = _stream(self.group, name, *where)
            if keep:
                self._keep(name, stream)
            return stream

    def _keep(self, name: str, stream: Any) -> None:
        """``stream`` stays made, as the last one read; the oldest beyond RECENT goes."""
        self.recent[name] = stream
        while len(self.recent) > RECENT:
            self._let_go(*self.recent.popitem(last=False))

    def _let_go(self, name: str, stream: Any) -> None:
        """A made stream leaves memory; one written to again is held as moto holds it."""
        if not isinstance(stream.events, kept.KeptEvents) and dict.get(self, name) is COLD:
            dict.__setitem__(self, name, stream)

    def freeze(self, name: str, stream: Any) -> None:
        """``stream`` (its job ended, its summary in ``streams.json``) is cold from now on;
        the stream itself is kept made for a while, for whoever holds it."""
        with self.guard:
            if dict.get(self, name) is stream:
                dict.__setitem__(self, name, COLD)
                self._keep(name, stream)

    def cold(self, name: str) -> None:
        """Stream ``name`` (kept in its job's ``streams.json``) is in the group, cold."""
        with self.guard:
            self.recent.pop(name, None)
            dict.__setitem__(self, name, COLD)

    def __getitem__(self, name: str) -> Any:
        found = dict.__getitem__(self, name)
        return self._made(name, keep=True) if found is COLD else found

    def get(self, name: str, default: Any = None) -> Any:
        try:
            return self[name]
        except KeyError:
            return default

    def __setitem__(self, name: str, stream: Any) -> None:
        with self.guard:
            self.recent.pop(name, None)
            dict.__setitem__(self, name, stream)

    def __delitem__(self, name: str) -> None:
        with self.guard:
            self.recent.pop(name, None)
            dict.__delitem__(self, name)

    def pop(self, name: str, *default: Any) -> Any:
        with self.guard:
            found = self.get(name, *default[:1])
            self.recent.pop(name, None)
            dict.pop(self, name, None)
            return found

    def items(self) -> Iterator[tuple[str, Any]]:  # type: ignore[override]
        """Each stream; a cold one as a :class:`_Later`, made (not kept) only if used: moto
        goes through every stream of the group, most often for the name alone."""
        for name, found in list(dict.items(self)):
            yield name, (_Later(self, name) if found is COLD else found)

    def values(self) -> Iterator[Any]:  # type: ignore[override]
        for _, stream in self.items():
            yield stream


class _Later:
    """A cold stream, made when one of its attributes is first read or set."""

    __slots__ = ("_made", "_name", "_streams")

    def __init__(self, streams: ColdStreams, name: str) -> None:
        object.__setattr__(self, "_streams", streams)
        object.__setattr__(self, "_name", name)
        object.__setattr__(self, "_made", None)

    def _stream(self) -> Any:
        if self._made is None:
            object.__setattr__(self, "_made", self._streams._made(self._name, keep=False))
        return self._made

    def __getattr__(self, attr: str) -> Any:
        return getattr(self._stream(), attr)

    def __setattr__(self, attr: str, value: Any) -> None:
        setattr(self._stream(), attr, value)


def _stream(group: Any, name: str, path: Path, summary: dict[str, Any]) -> Any:
    """moto's stream ``name`` of ``group`` as it was when its job ended."""
    from moto.core.utils import utcfromtimestamp
    from moto.logs.models import LogStream
    from moto.utilities.utils import get_partition

    stream = object.__new__(LogStream)
    stream.account_id, stream.region, stream.log_group = group.account_id, group.region, group
    stream.arn = (
        f"arn:{get_partition(group.region)}:logs:{group.region}:{group.account_id}:"
        f"log-group:{group.name}:log-stream:{name}"
    )
    stream.creation_time = utcfromtimestamp(summary["created"] / 1000)
    stream.log_stream_name = name
    stream.last_ingestion_time = None
    kept.attach(stream, path, summary)
    return stream
