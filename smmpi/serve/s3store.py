"""S3 as serve keeps it: moto's S3 backend, its objects kept in files under ``STATE/s3``.

After every request that writes (and after serve's own uploads) what changed in
the backend is written: each object is a 0600 file of its bytes in ``objects``
and one of its description in ``keys`` (:mod:`.coldkeys`), both named by the
hash of its bucket and key, so no key, however it is spelled, can name a path;
the buckets and their regions are ``buckets.json``. At start, the buckets are
made again and every object is put back in them, cold.

Once an object is on disk, moto's copy of its bytes is dropped: the key reads
them from serve's file when moto reads them (:class:`OnDisk`), and the key
itself leaves memory (:class:`.coldkeys.ColdKeys`): serve's memory holds the
object's name only. Before serve's file for a key changes (a new version, a
delete), the object it held is read back into memory for whoever still holds it
(an older version, a read under way).
"""

from __future__ import annotations

import io
import os
import threading
import weakref
from pathlib import Path
from typing import Any

from smmpi.serve.coldkeys import (
    COLD,
    ColdKeys,
    describe,
    freezable,
    object_id,
    read_description,
)
from smmpi.serve.job_records import ACCOUNT
from smmpi.serve.state import read_json, subfolder, write_json, write_private

_object_id = object_id


def _backend() -> Any:
    from moto.s3.models import s3_backends

    return s3_backends[ACCOUNT]["aws"]


def _is_object(key: Any) -> bool:
    """An object, not a delete marker (asked of its class: reading ``value`` reads the bytes)."""
    return hasattr(type(key), "value")


class OnDisk:
    """An object's bytes as moto's key reads them (``seek``, ``read``), from serve's file.

    It stands in for the key's in-memory buffer. Writing to it (moto sets a key's bytes
    anew), or :meth:`hold` before serve's file changes, puts the bytes back in memory.
    """

    __slots__ = ("__weakref__", "etag", "folder", "memory", "oid", "position")

    def __init__(self, folder: str, oid: str, etag: str | None = None) -> None:
        self.folder, self.oid, self.position, self.etag = folder, oid, 0, etag
        self.memory: io.BytesIO | None = None

    def hold(self) -> None:
        if self.memory is None:
            self.memory = io.BytesIO(self._file(0, -1))
            self.memory.seek(self.position)

    def _file(self, start: int, size: int) -> bytes:
        fd = os.open(os.path.join(self.folder, self.oid), os.O_RDONLY | os.O_NOFOLLOW)
        with os.fdopen(fd, "rb") as f:
            f.seek(start)
            return f.read(size)

    def seek(self, offset: int, whence: int = 0) -> int:
        if self.memory is None and whence == 0:
            self.position = offset
            return offset
        self.hold()
        assert self.memory is not None
        return self.memory.seek(offset, whence)

    def tell(self) -> int:
        return self.position if self.memory is None else self.memory.tell()

    def read(self, size: int = -1) -> bytes:
        if self.memory is not None:
            return self.memory.read(size)
        data = self._file(self.position, size)
        self.position += len(data)
        return data

    def truncate(self, size: int | None = None) -> int:
        self.hold()
        assert self.memory is not None
        return self.memory.truncate(size)

    def write(self, data: bytes) -> int:
        self.hold()
        assert self.memory is not None
        return self.memory.write(data)

    def close(self) -> None:
        """moto disposes of a deleted key's buffer; serve's file is serve's to remove."""


def _drop_bucket(backend: Any, name: str) -> None:
    for key in list(backend.buckets[name].keys):
        backend.delete_object(name, key)
    backend.delete_bucket(name)


class S3Store:
    """moto's S3 with its objects kept on disk; serve's own reads and writes go through it."""

    def __init__(self, root: Path) -> None:
        self.folder = subfolder(root, "s3")
        self.objects = subfolder(self.folder, "objects")
        self.described = subfolder(self.folder, "keys")
        self.objects_path = str(self.objects)
        self.buckets_path = self.folder / "buckets.json"
        self.lock = threading.Lock()
        self.buckets: dict[str, str] = {}  # name -> region, as buckets.json has them
        self.stores: dict[str, ColdKeys] = {}  # each bucket's keys, cold ones on disk
        self.on_disk: weakref.WeakSet[OnDisk] = weakref.WeakSet()  # every key's, in use

    def _buffer(self, oid: str, etag: str | None = None) -> OnDisk:
        """A new reader of serve's file ``oid`` (one per key: each has its own position)."""
        buffer = OnDisk(self.objects_path, oid, etag)
        self.on_disk.add(buffer)
        return buffer

    def _to_disk(self, oid: str, key: Any) -> None:
        """From now on, ``key`` reads its bytes from serve's file ``oid``."""
        buffer = self._buffer(oid, key.etag)
        with key.lock:
            key._value_buffer = buffer

    def _changing(self, oid: str) -> None:
        """Serve's file ``oid`` is about to change: the keys reading it hold their bytes."""
        for buffer in list(self.on_disk):
            if buffer.oid == oid and buffer.memory is None:
                buffer.hold()
                self.on_disk.discard(buffer)

    def _store(self, name: str, bucket: Any) -> ColdKeys:
        """``bucket``'s key store, made a :class:`ColdKeys` (in place: a request holding it
        holds the same store)."""
        store: ColdKeys = bucket.keys
        if not isinstance(store, ColdKeys):
            store.__class__ = ColdKeys
            store.attach(name, self.described, self._buffer)
        self.stores[name] = store
        return store

    def restore(self) -> None:
        """Put every bucket and object kept on disk back into moto's backend."""
        legacy = self.folder / "index.json"  # what serve kept before keys were described
        if self.buckets_path.exists():
            self.buckets = read_json(self.buckets_path)
        elif legacy.exists():
            self.buckets = read_json(legacy)["buckets"]
        else:
            return  # a new state folder
        backend = _backend()
        for bucket, region in self.buckets.items():
            if bucket not in backend.buckets:
                backend.create_bucket(bucket, region)
            self._store(bucket, backend.buckets[bucket])
        for path in self.described.iterdir():
            self._restore_key(backend, path)
        if legacy.exists():
            for oid, entry in read_json(legacy)["objects"].items():
                path = self.objects / oid
                if entry["bucket"] in backend.buckets and path.is_file():
                    backend.put_object(entry["bucket"], entry["key"], path.read_bytes())
        for name in set(backend.buckets) - set(self.buckets):
            _drop_bucket(backend, name)  # a replayed stack's bucket, deleted since
        self.sync()
        write_json(self.buckets_path, self.buckets)
        legacy.unlink(missing_ok=True)

    def _restore_key(self, backend: Any, path: Path) -> None:
        """The object ``path`` describes, back in its bucket, cold."""
        if path.name.startswith("."):
            return  # a file being written when serve stopped
        state = read_description(path)
        if state is None:
            return
        bucket, name = state.get("bucket_name"), state.get("name")
        store = self.stores.get(str(bucket))
        if store is None or not (self.objects / path.name).is_file():
            return
        if object_id(str(bucket), str(name)) == path.name:
            dict.__setitem__(store, name, COLD)

    def sync(self) -> None:
        """Write what changed in moto's S3 since the last sync (objects added, changed, removed)."""
        with self.lock:
            backend = _backend()
            buckets = {name: b.region_name for name, b in list(backend.buckets.items())}
            if buckets != self.buckets:
                write_json(self.buckets_path, buckets)
                self.buckets = buckets
            for name, bucket in list(backend.buckets.items()):
                self._sync_bucket(name, self._store(name, bucket))
            for name in set(self.stores) - set(buckets):
                self._removed(name, self.stores.pop(name))

    def _removed(self, bucket: str, store: ColdKeys) -> None:
        """The files of the keys popped from ``store`` since the last sync, unless put again."""
        with store.guard:
            gone, store.gone = store.gone, set()
        for name in gone:
            if dict.get(store, name) is None:
                self._forget(object_id(bucket, name))

    def _forget(self, oid: str) -> None:
        self._changing(oid)
        (self.objects / oid).unlink(missing_ok=True)
        (self.described / oid).unlink(missing_ok=True)

    def _sync_bucket(self, bucket: str, store: ColdKeys) -> None:
        self._removed(bucket, store)
        for name, held in store.raw():
            if held is COLD:
                continue
            oid = object_id(bucket, name)
            key = held[-1] if held else None
            if key is None or not _is_object(key):  # a delete marker: the object is gone
                if (self.objects / oid).exists():
                    self._forget(oid)
                continue
            buffer = key._value_buffer
            if not (isinstance(buffer, OnDisk) and buffer.memory is None
                    and buffer.oid == oid and buffer.etag == key.etag):  # fmt: skip
                data = key.value
                self._changing(oid)
                write_private(self.objects / oid, data)
                self._to_disk(oid, key)
                if not freezable(held):  # kept in memory, described for the next start
                    write_private(self.described / oid, describe(key))
            if freezable(held):
                store.freeze(name, held)
        store.flush()

    def get(self, bucket: str, key: str) -> bytes:
        found = _backend().get_object(bucket, key)
        if found is None or not _is_object(found):
            raise KeyError(f"s3://{bucket}/{key}")
        data: bytes = found.value
        return data

    def keys(self, bucket: str, prefix: str) -> list[str]:
        """The objects' keys under ``prefix`` (a cold key is an object: none is made)."""
        store = _backend().get_bucket(bucket).keys
        held = store.raw() if isinstance(store, ColdKeys) else list(dict.items(store))
        return sorted(
            name
            for name, versions in held
            if name.startswith(prefix)
            and (versions is COLD or (bool(versions) and _is_object(versions[-1])))
        )

    def ensure_bucket(self, bucket: str, region: str) -> None:
        if bucket not in _backend().buckets:
            _backend().create_bucket(bucket, region)
            self.sync()

    def put(self, bucket: str, key: str, data: bytes) -> None:
        _backend().put_object(bucket, key, data)
        self.sync()
