"""S3 as serve keeps it: moto's S3 backend in memory, mirrored to files under ``STATE/s3``.

After every request that writes (and after serve's own uploads) the backend
is compared with an index of what is on disk and the difference is written:
each object is one 0600 file named by the hash of its bucket and key, so no
key, however it is spelled, can name a path. At start the index is replayed
into moto, and the buckets and objects are back.
"""

from __future__ import annotations

import hashlib
import threading
from pathlib import Path
from typing import Any

from smmpi.serve.jobs import ACCOUNT
from smmpi.serve.state import read_json, subfolder, write_json, write_private


def _backend() -> Any:
    from moto.s3.models import s3_backends

    return s3_backends[ACCOUNT]["aws"]


def _object_id(bucket: str, key: str) -> str:
    return hashlib.sha256(f"{bucket}\0{key}".encode("utf-8", "surrogateescape")).hexdigest()


def _drop_bucket(backend: Any, name: str) -> None:
    for key in list(backend.buckets[name].keys):
        backend.delete_object(name, key)
    backend.delete_bucket(name)


class S3Store:
    """moto's S3 with its objects kept on disk; serve's own reads and writes go through it."""

    def __init__(self, root: Path) -> None:
        self.folder = subfolder(root, "s3")
        self.objects = subfolder(self.folder, "objects")
        self.index_path = self.folder / "index.json"
        self.lock = threading.Lock()
        self.index: dict[str, Any] = {"buckets": {}, "objects": {}}

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
                    if not hasattr(key, "value"):  # a delete marker
                        continue
                    oid = _object_id(name, key_name)
                    entry = {"bucket": name, "key": key_name, "etag": key.etag}
                    if self.index["objects"].get(oid) != entry:
                        write_private(self.objects / oid, key.value)
                        changed = True
                    seen[oid] = entry
            for oid in set(self.index["objects"]) - set(seen):
                (self.objects / oid).unlink(missing_ok=True)
                changed = True
            if changed:
                self.index = {"buckets": buckets, "objects": seen}
                write_json(self.index_path, self.index)

    def get(self, bucket: str, key: str) -> bytes:
        found = _backend().get_object(bucket, key)
        if found is None or not hasattr(found, "value"):
            raise KeyError(f"s3://{bucket}/{key}")
        data: bytes = found.value
        return data

    def keys(self, bucket: str, prefix: str) -> list[str]:
        found = _backend().get_bucket(bucket)
        return sorted(
            k for k, v in found.keys.items() if k.startswith(prefix) and hasattr(v, "value")
        )

    def ensure_bucket(self, bucket: str, region: str) -> None:
        if bucket not in _backend().buckets:
            _backend().create_bucket(bucket, region)
            self.sync()

    def put(self, bucket: str, key: str, data: bytes) -> None:
        _backend().put_object(bucket, key, data)
        self.sync()
