"""A bucket's keys as moto holds them, with what no request is using kept on disk.

moto keeps each S3 object as a ``FakeKey`` in its bucket's key store (a dict of
the key's name to its versions). Once an object is on disk (:mod:`.s3store`),
its key's description (its ETag, size, times, metadata, ACL...) is written to
``STATE/s3/keys/OID`` and the store holds the marker :data:`COLD` in its place:
memory keeps the key's name and nothing else. Reading the key (GetObject,
HeadObject, a listing, a delete) makes the ``FakeKey`` again from that file,
with its bytes read from serve's file (:class:`.s3store.OnDisk`). The last
:data:`RECENT` keys made are kept made, so that a request which reads a key and
then changes it (its ACL, its tags...) changes one object, and the change is
written back before the key is let go.

Only a plain object is kept cold: one version, not a delete marker, not made of
multipart parts (those keep their parts in memory, as moto holds them).
"""

from __future__ import annotations

import hashlib
import io
import os
import pickle
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from smmpi.serve.state import write_private

RECENT = 64  # keys made from their files and kept made (the last ones read)
_SKIPPED = ("_value_buffer", "lock")  # the bytes are serve's file; a lock is made anew


class _Cold:
    """What a key store holds for a key whose description is on disk."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "COLD"


COLD = _Cold()

#: The modules whose classes a key's description is made of (moto's S3 models, dates,
#: containers); only classes of them, never a function, are loaded.
_ALLOWED = frozenset({"moto.s3.models", "moto.utilities.utils", "datetime", "collections"})
_BUILTINS = frozenset({"set", "frozenset", "dict", "list", "tuple", "bytearray", "object"})


class _Unpickler(pickle.Unpickler):
    """Only the classes a key's description is made of (moto's, dates, containers)."""

    def find_class(self, module: str, name: str) -> Any:
        if (module == "builtins" and name in _BUILTINS) or module in _ALLOWED:
            found = super().find_class(module, name)
            if isinstance(found, type):
                return found
        raise pickle.UnpicklingError(f"{module}.{name} is not part of a key's description")


def object_id(bucket: str, key: str) -> str:
    """The name of an object's files: the hash of its bucket and key (no key is a path)."""
    return hashlib.sha256(f"{bucket}\0{key}".encode("utf-8", "surrogateescape")).hexdigest()


def _read(path: Path) -> bytes | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        return f.read()


def _load(data: bytes) -> dict[str, Any]:
    state = _Unpickler(io.BytesIO(data)).load()
    if not isinstance(state, dict):
        raise pickle.UnpicklingError("a key's description is a dict")
    return state


def read_description(path: Path) -> dict[str, Any] | None:
    """The description in ``path`` (None if it cannot be read)."""
    data = _read(path)
    try:
        return None if data is None else _load(data)
    except (pickle.UnpicklingError, ValueError, EOFError, TypeError, AttributeError):
        return None


def describe(key: Any) -> bytes:
    """``key``'s description, as its file holds it."""
    state = {k: v for k, v in key.__dict__.items() if k not in _SKIPPED}
    state["multipart"] = None  # its parts (kept in memory while serve runs) are not kept
    return pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL)


def freezable(versions: Any) -> bool:
    """Whether a key's versions are one plain object, which can be kept cold."""
    if not isinstance(versions, list) or len(versions) != 1:
        return False
    key = versions[0]
    return hasattr(type(key), "value") and not key.multipart and not key._is_versioned


class ColdKeys(dict):  # type: ignore[type-arg]
    """moto's ``_VersionedKeyStore`` (this class is put in its place, in its bucket), with
    cold keys. ``attach`` sets what it needs: its bucket's name and the folders."""

    bucket: str
    folder: Path
    buffer: Callable[[str], Any]  # the OnDisk buffer of an object, by its id
    recent: OrderedDict[str, tuple[list[Any], bytes]]  # made keys, as last written
    gone: set[str]  # names popped since the last sync (their files go)
    guard: threading.RLock

    def attach(self, bucket: str, folder: Path, buffer: Callable[[str], Any]) -> None:
        self.bucket, self.folder, self.buffer = bucket, folder, buffer
        self.recent, self.gone, self.guard = OrderedDict(), set(), threading.RLock()

    def _made(self, name: str, keep: bool) -> list[Any]:
        """The key ``name`` made from its file (KeyError if the file is gone)."""
        with self.guard:
            found = self.recent.get(name)
            if found is not None:
                self.recent.move_to_end(name)
                return found[0]
            oid = object_id(self.bucket, name)
            data = _read(self.folder / oid)
            if data is None:
                raise KeyError(name)
            from moto.s3.models import FakeKey

            key = object.__new__(FakeKey)
            key.__dict__.update(_load(data), lock=threading.Lock(), _value_buffer=self.buffer(oid))
            key.disposed = True  # its bytes are serve's: nothing of moto's to close
            if keep:
                self._keep([key], name, data)
            return [key]

    def _keep(self, versions: list[Any], name: str, data: bytes) -> None:
        self.recent[name] = (versions, data)
        while len(self.recent) > RECENT:
            self._let_go(*self.recent.popitem(last=False))

    def _let_go(self, name: str, held: tuple[list[Any], bytes]) -> None:
        """A made key leaves memory (or is kept on): what a request changed is written first."""
        versions, written = held
        data = describe(versions[0])
        if data != written and dict.get(self, name) is COLD:
            write_private(self.folder / object_id(self.bucket, name), data)
            if name in self.recent:
                self.recent[name] = (versions, data)

    def freeze(self, name: str, versions: list[Any]) -> None:
        """Keep ``name`` cold from now on, if the store still holds ``versions`` (a plain
        object whose bytes were just written): a request may have put another since. The key
        itself is kept made for a while, so whoever holds it still holds the store's key."""
        with self.guard:
            if dict.get(self, name) is not versions or not freezable(versions):
                return
            data = describe(versions[0])
            write_private(self.folder / object_id(self.bucket, name), data)
            dict.__setitem__(self, name, COLD)
            self._keep(versions, name, data)

    def flush(self) -> None:
        """Write what requests changed in the keys kept made."""
        with self.guard:
            for name, held in list(self.recent.items()):
                self._let_go(name, held)

    def __sgetitem__(self, name: str) -> list[Any]:
        found = dict.__getitem__(self, name)
        return self._made(name, keep=True) if found is COLD else found  # type: ignore[no-any-return]

    def __getitem__(self, name: str) -> Any:
        return self.__sgetitem__(name)[-1]

    def __setitem__(self, name: str, value: Any) -> None:
        try:
            current = self.__sgetitem__(name)
            current.append(value)
        except (KeyError, IndexError):
            current = [value]
        self._hot(name, current)

    def _hot(self, name: str, versions: list[Any]) -> None:
        with self.guard:
            self.recent.pop(name, None)
            dict.__setitem__(self, name, versions)

    def get(self, name: str, default: Any = None) -> Any:
        try:
            return self[name]
        except (KeyError, IndexError):
            return default

    def getlist(self, name: str, default: Any = None) -> Any:
        try:
            return self.__sgetitem__(name)
        except (KeyError, IndexError):
            return default

    def setlist(self, name: str, versions: Any) -> None:
        if isinstance(versions, tuple):
            versions = list(versions)
        elif not isinstance(versions, list):
            versions = [versions]
        for existing in self.getlist(name, []):
            if existing not in versions and hasattr(existing, "dispose"):
                existing.dispose()
        self._hot(name, versions)

    def pop(self, name: str, *default: Any) -> Any:  # type: ignore[override]
        for version in self.getlist(name, []):
            version.dispose()
        with self.guard:
            self.recent.pop(name, None)
            self.gone.add(name)
            return dict.pop(self, name, *default)

    def __delitem__(self, name: str) -> None:
        self.pop(name)

    def _listed(self, name: str) -> list[Any] | None:
        """A key's versions for a listing: a cold key is made for the moment, not kept."""
        try:
            found = dict.__getitem__(self, name)
            return self._made(name, keep=False) if found is COLD else found  # type: ignore[no-any-return]
        except (KeyError, IndexError):
            return None  # removed, or its file is (moto's reset of a state folder gone)

    def items(self) -> Iterator[tuple[str, Any]]:  # type: ignore[override]
        for name in list(dict.keys(self)):
            versions = self._listed(name)
            if versions:
                yield name, versions[-1]

    def values(self) -> Iterator[Any]:  # type: ignore[override]
        for _, key in self.items():
            yield key

    def lists(self) -> Iterator[tuple[str, list[Any]]]:
        for name in list(dict.keys(self)):
            versions = self._listed(name)
            if versions is not None:
                yield name, versions

    iteritems = items
    itervalues = values
    iterlists = lists

    def item_size(self) -> int:
        return sum(1 for _ in dict.keys(self))  # what moto asks: whether there are any

    def _self_iterable(self) -> dict[str, Any]:
        return dict(self)

    def raw(self) -> list[tuple[str, Any]]:
        """Each name and what the store holds for it (COLD, or the versions), unmade."""
        with self.guard:
            return list(dict.items(self))
