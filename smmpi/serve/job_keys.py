"""Credentials serve mints for one ``@remote`` job: S3 under the job's own folder, while it runs.

On SageMaker a job's container gets its role's credentials; what the role allows, it may do.
serve's stand-in: when an ``@remote`` job starts (its request names a role, as every
CreateTrainingJob does), serve mints a key pair for it and gives it to the job's instances
only (never printed, never written to disk). serve's signature check takes that key:

- for S3 only, and only for objects under the job's own folder, ``s3_base_uri``
  (``s3_root_uri/JOB``: its function, arguments, results and exception): GetObject,
  HeadObject, PutObject, multipart uploads of such keys, and ListObjects under that prefix;
  nothing at the bucket's level, no other bucket, no copy from elsewhere;
- only while the job runs: the key is forgotten as the job ends (and serve keeps none of
  them across a restart).
"""

from __future__ import annotations

import secrets
import string
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, unquote

from smmpi.serve.auth import Incoming
from smmpi.serve.errors import ApiError
from smmpi.serve.state import Keys
from smmpi.toolkit.driver_world import is_remote_function

#: What a listing may ask besides its prefix (ListObjects and ListObjectsV2).
_LISTING = frozenset(
    {"list-type", "prefix", "delimiter", "continuation-token", "max-keys", "start-after",
     "encoding-type", "marker", "fetch-owner"}
)  # fmt: skip
#: Sub-resources of an object that its key's holder may use (multipart uploads).
_OBJECT = frozenset({"uploads", "uploadId", "partNumber", "x-id"})


@dataclass(frozen=True)
class JobKey:
    """A minted key pair and what it may reach: objects under ``bucket``/``prefix``."""

    job: str
    keys: Keys
    bucket: str
    prefix: str  # ends with "/"


def remote_folder(request: Mapping[str, Any]) -> tuple[str, str] | None:
    """An ``@remote`` request's ``--s3_base_uri`` as (bucket, prefix ending in "/"); None
    for any other request (it gets no key)."""
    if not is_remote_function(request):
        return None
    args = [str(a) for a in (request.get("AlgorithmSpecification") or {}).get(
        "ContainerArguments") or []]  # fmt: skip
    if "--s3_base_uri" not in args[:-1]:
        return None
    uri = args[args.index("--s3_base_uri") + 1]
    bucket, _, prefix = uri.removeprefix("s3://").partition("/")
    if not uri.startswith("s3://") or not bucket or not prefix.strip("/"):
        return None
    return bucket, prefix.strip("/") + "/"


def _new_pair() -> Keys:
    upper = string.ascii_uppercase + string.digits
    alphabet = string.ascii_letters + string.digits + "+/"
    access = "ASIA" + "".join(secrets.choice(upper) for _ in range(16))
    return Keys(access, "".join(secrets.choice(alphabet) for _ in range(40)))


class JobKeys:
    """The keys of the jobs running now, by access key id."""

    def __init__(self) -> None:
        self._keys: dict[str, JobKey] = {}
        self._lock = threading.Lock()

    def mint(self, job: str, bucket: str, prefix: str) -> JobKey:
        minted = JobKey(job, _new_pair(), bucket, prefix)
        with self._lock:
            self._keys[minted.keys.access_key] = minted
        return minted

    def revoke(self, job: str) -> None:
        with self._lock:
            for access in [a for a, k in self._keys.items() if k.job == job]:
                del self._keys[access]

    def find(self, access_key: str | None) -> JobKey | None:
        with self._lock:
            return self._keys.get(access_key or "")


def _denied(what: str) -> ApiError:
    return ApiError("AccessDenied", f"the job's credentials do not allow {what}", 403)


def check_reach(key: JobKey, incoming: Incoming, service: str) -> None:
    """Refuse (S3's ``AccessDenied``) what ``key`` may not do; path-style S3 requests only."""
    if service != "s3":
        raise _denied(f"{service}: S3 under s3://{key.bucket}/{key.prefix} only")
    host = incoming.headers.get("host", "").rsplit(":", 1)[0]
    if not host.replace(".", "").isdigit() and host != "localhost":
        raise _denied("virtual-host addressing: path-style requests only")  # as the SDK sends
    bucket, _, raw_key = incoming.path.lstrip("/").partition("/")
    pairs = parse_qsl(incoming.query, keep_blank_values=True)
    query = dict(pairs)
    if len(query) != len(pairs):  # a parameter twice: which one S3 would take is not ours
        raise _denied("a query parameter given twice")
    if unquote(bucket) != key.bucket:
        raise _denied(f"bucket {unquote(bucket)[:64]!r}")
    source = incoming.headers.get("x-amz-copy-source")
    if source is not None:
        from_bucket, _, from_key = unquote(source).lstrip("/").partition("/")
        if from_bucket != key.bucket or not _under(key, from_key.partition("?")[0]):
            raise _denied("a copy from outside the job's folder")
    if raw_key:
        if not _under(key, unquote(raw_key)) or set(query) - _OBJECT:
            raise _denied(f"s3://{key.bucket}/{unquote(raw_key)[:200]}")
        return
    listing = incoming.method in ("GET", "HEAD") and not set(query) - _LISTING
    if not listing or not query.get("prefix", "").startswith(key.prefix):
        raise _denied(f"a request on bucket {key.bucket} outside {key.prefix}")


def _under(key: JobKey, name: str) -> bool:
    parts = name.split("/")
    return name.startswith(key.prefix) and "." not in parts and ".." not in parts
