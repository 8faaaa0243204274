"""S3 as serve keeps it: moto's S3 backend in memory, mirrored to files under ``STATE/s3``.

After every request that writes (and after serve's own uploads) the backend
is compared with an index of what is on disk and the difference is written:
each object is one 0600 file named by the hash of its bucket and key, so no
key, however it is spelled, can name a path. At start the index is replayed
into moto, and the buckets and objects are back.

Once an object is on disk, moto's copy of its bytes is dropped: the key reads
them from serve's file when moto reads them (:class:`OnDisk`), so memory holds
no object's data, only moto's description of it. Before serve's file for a key
changes (a new version, a delete), the object it held is read back into memory
for whoever still holds it (an older version, a read under way).
"""

from __future__ import annotations

import hashlib
import io
import os
import threading
import weakref
from pathlib import Path
from typing import Any

from smmpi.serve.jobs import ACCOUNT
from smmpi.serve.state import read_json, subfolder, write_json, write_private


def _backend() -> Any:
    from moto.s3.models import s3_backends

    return s3_backends[ACCOUNT]["aws"]


def _is_object(key: Any) -> bool:
    """An object, not a delete marker (asked of its class: reading ``value`` reads the bytes)."""
    return hasattr(type(key), "value")


def _object_id(bucket: str, key: str) -> str:
    return hashlib.sha256(f"{bucket}\0{key}".encode("utf-8", "surrogateescape")).hexdigest()


class OnDisk:
    """An object's bytes as moto's key reads them (``seek``, ``read``), from serve's file.

    It stands in for the key's in-memory buffer. Writing to it (moto sets a key's bytes
    anew), or :meth:`hold` before serve's file changes, puts the bytes back in memory.
    """

    def __init__(self, folder: str, oid: str) -> None:
        self.folder, self.oid, self.position = folder, oid, 0
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
        self.objects_path = str(self.objects)
        self.index_path = self.folder / "index.json"
        self.lock = threading.Lock()
        self.index: dict[str, Any] = {"buckets": {}, "objects": {}}
        self.on_disk: weakref.WeakValueDictionary[str, OnDisk] = weakref.WeakValueDictionary()

    def _to_disk(self, oid: str, key: Any) -> None:
        """From now on, ``key`` reads its bytes from serve's file ``oid``."""
        buffer = OnDisk(self.objects_path, oid)
        with key.lock:
            key._value_buffer = buffer
        self.on_disk[oid] = buffer

    def _changing(self, oid: str) -> None:
        """Serve's file ``oid`` is about to change: the key reading it holds its bytes."""
        buffer = self.on_disk.pop(oid, None)
        if buffer is not None:
            buffer.hold()

    def restore(self) -> None:
        """Put every bucket and object kept on disk back into moto's backend."""
        if not self.index_path.exists():
            return
        self.index = read_json(self.index_path)
        backend = _backend()
        for bucket, region in self.index["buckets"].items():
            if bucket not in backend.buckets:
                backend.create_bucket(bucket, region)
        for oid, entry in self.index["objects"].items():
            path = self.objects / oid
            if path.is_file() and entry["bucket"] in backend.buckets:
                key = backend.put_object(entry["bucket"], entry["key"], path.read_bytes())
                entry["etag"] = key.etag
                self._to_disk(oid, key)
        for name in set(backend.buckets) - set(self.index["buckets"]):
            _drop_bucket(backend, name)  # a replayed stack's bucket, deleted since
        write_json(self.index_path, self.index)

    def sync(self) -> None:
        """Write what changed in moto's S3 since the last sync (objects added, changed, removed)."""
        with self.lock:
            backend = _backend()
            buckets = {name: b.region_name for name, b in list(backend.buckets.items())}
            seen: dict[str, Any] = {}
            changed = buckets != self.index["buckets"]
            for name, bucket in list(backend.buckets.items()):
                for key_name, key in bucket.keys.items():
                    if not _is_object(key):  # a delete marker
                        continue
                    oid = _object_id(name, key_name)
                    entry = {"bucket": name, "key": key_name, "etag": key.etag}
                    if self.index["objects"].get(oid) != entry:
                        data = key.value
                        self._changing(oid)
                        write_private(self.objects / oid, data)
                        self._to_disk(oid, key)
                        changed = True
                    elif not isinstance(key._value_buffer, OnDisk):  # the same bytes put again
                        self._changing(oid)
                        self._to_disk(oid, key)
                    seen[oid] = entry
            for oid in set(self.index["objects"]) - set(seen):
                self._changing(oid)
                (self.objects / oid).unlink(missing_ok=True)
                changed = True
            if changed:
                self.index = {"buckets": buckets, "objects": seen}
                write_json(self.index_path, self.index)

    def get(self, bucket: str, key: str) -> bytes:
        found = _backend().get_object(bucket, key)
        if found is None or not _is_object(found):
            raise KeyError(f"s3://{bucket}/{key}")
        data: bytes = found.value
        return data

    def keys(self, bucket: str, prefix: str) -> list[str]:
        found = _backend().get_bucket(bucket)
        return sorted(k for k, v in found.keys.items() if k.startswith(prefix) and _is_object(v))

    def ensure_bucket(self, bucket: str, region: str) -> None:
        if bucket not in _backend().buckets:
            _backend().create_bucket(bucket, region)
            self.sync()

    def put(self, bucket: str, key: str, data: bytes) -> None:
        _backend().put_object(bucket, key, data)
        self.sync()
