"""SigV4 verification: the signature a request carries, recomputed as botocore's signer computes it.

serve accepts its own key pair (:mod:`.state`), and the keys it mints for jobs
(:mod:`.job_keys`, which limits what they reach). For each request it
parses the ``Authorization`` header, refuses another access key, then signs
the request again by botocore's algorithm (:class:`~botocore.auth.SigV4Auth`'s
canonical request, limited to the headers the client signed, at the client's
timestamp; the day's derived key computed once) and compares the two
signatures in constant time. A body whose ``X-Amz-Content-SHA256``
does not match what arrived is refused too, and only S3 takes an unsigned
body (``UNSIGNED-PAYLOAD``): every other service's signature covers the
body's own hash, so a captured request cannot be sent again with another body.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import re
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from urllib.parse import parse_qsl, quote, urlsplit

from botocore.utils import normalize_url_path

from smmpi.serve.errors import ApiError, auth_error
from smmpi.serve.state import Keys

_AUTH_RE = re.compile(
    r"^AWS4-HMAC-SHA256 Credential=(?P<cred>[^,\s]+),\s*SignedHeaders=(?P<signed>[^,\s]+),"
    r"\s*Signature=(?P<sig>[0-9a-f]{64})$"
)
_SCOPE_RE = re.compile(
    r"^(?P<key>[A-Z0-9]{16,128})/(?P<date>\d{8})/(?P<region>[a-z0-9-]{1,32})/"
    r"(?P<service>[a-z0-9-]{1,64})/aws4_request$"
)
_HEADER_NAME = re.compile(r"^[a-z0-9-]{1,64}$")
MAX_SKEW = 15 * 60  # seconds, as AWS allows
_UNSIGNED = ("UNSIGNED-PAYLOAD", "STREAMING-")


@dataclass(frozen=True)
class Signed:
    """Who signed a request, for which region and service."""

    region: str
    service: str


@dataclass(frozen=True)
class Incoming:
    """What the signature covers: method, raw path and query, headers and body."""

    method: str
    path: str
    query: str
    headers: dict[str, str]  # lower-case names
    body: bytes


def scope_of(authorization: str | None) -> tuple[str, str] | None:
    """(region, service) from a SigV4 header's credential scope, without verifying it."""
    m = _AUTH_RE.match(authorization or "")
    scope = _SCOPE_RE.match(m["cred"]) if m else None
    return (scope["region"], scope["service"]) if scope else None


def access_key_of(authorization: str | None) -> str | None:
    """The access key id a SigV4 header names, without verifying it."""
    m = _AUTH_RE.match(authorization or "")
    scope = _SCOPE_RE.match(m["cred"]) if m else None
    return scope["key"] if scope else None


@functools.lru_cache(maxsize=1024)  # pollers send the same paths again and again
def _path(host: str, path: str, service: str) -> str:
    """The canonical URI: as sent for S3 (botocore's S3SigV4Auth), else normalized and quoted."""
    raw = urlsplit(f"http://{host}{path}").path
    return raw if service == "s3" else quote(normalize_url_path(raw), safe="/~")


def _query(query: str) -> str:
    """The canonical query string, as botocore builds it from the request's parameters."""
    if not query:
        return ""
    pairs = sorted(
        (quote(key, safe="-_.~"), quote(value, safe="-_.~"))
        for key, value in parse_qsl(query, keep_blank_values=True)
    )
    return "&".join(f"{key}={value}" for key, value in pairs)


def canonical_request(incoming: Incoming, signed: list[str], service: str) -> str:
    """SigV4's canonical request for what the client signed (botocore's algorithm)."""
    names = sorted(set(signed))
    headers = "\n".join(
        f"{name}:{' '.join(incoming.headers.get(name, '').split())}" for name in names
    )
    payload = incoming.headers.get("x-amz-content-sha256") if service == "s3" else None
    if payload is None:  # every other service signs the body's own hash
        payload = hashlib.sha256(incoming.body).hexdigest()
    return "\n".join((
        incoming.method.upper(),
        _path(incoming.headers.get("host", ""), incoming.path, service),
        _query(incoming.query),
        headers + "\n",
        ";".join(names),
        payload,
    ))  # fmt: skip


@functools.lru_cache(maxsize=64)
def _signing_key(secret: str, date: str, region: str, service: str) -> bytes:
    """SigV4's derived key for one day, region and service (computed once, then reused)."""
    key = ("AWS4" + secret).encode()
    for part in (date, region, service, "aws4_request"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    return key


def signature(keys: Keys, incoming: Incoming, signed: list[str], scope: tuple[str, ...]) -> str:
    """The signature ``keys`` give the request; ``scope`` is (timestamp, region, service)."""
    stamp, region, service = scope
    text = "\n".join((
        "AWS4-HMAC-SHA256",
        stamp,
        f"{stamp[:8]}/{region}/{service}/aws4_request",
        hashlib.sha256(canonical_request(incoming, signed, service).encode()).hexdigest(),
    ))  # fmt: skip
    key = _signing_key(keys.secret_key, stamp[:8], region, service)
    return hmac.new(key, text.encode(), hashlib.sha256).hexdigest()


_STAMP = re.compile(r"^(\d{4})(\d\d)(\d\d)T(\d\d)(\d\d)(\d\d)Z$")


@functools.lru_cache(maxsize=256)
def _epoch(stamp: str) -> float | None:
    """``X-Amz-Date``'s time (``YYYYMMDDTHHMMSSZ``) in epoch seconds; None if malformed."""
    found = _STAMP.match(stamp)
    try:
        if found is None:
            return None
        year, month, day, hour, minute, second = (int(part) for part in found.groups())
        return datetime(year, month, day, hour, minute, second, tzinfo=timezone.utc).timestamp()
    except ValueError:
        return None


def _timestamp(headers: dict[str, str], service: str | None) -> str:
    stamp = headers.get("x-amz-date", "")
    when = _epoch(stamp)
    if when is None:
        raise auth_error("missing", "X-Amz-Date is missing or malformed", service)
    if abs(time.time() - when) > MAX_SKEW:
        raise auth_error("expired", "Signature expired: X-Amz-Date is too far from now", service)
    return stamp


def _check_payload(incoming: Incoming, service: str) -> None:
    """``X-Amz-Content-SHA256``, if sent, is the body's hash; only S3 takes an unsigned body."""
    claimed = incoming.headers.get("x-amz-content-sha256")
    if claimed is None or (service == "s3" and claimed.startswith(_UNSIGNED)):
        return
    if claimed.startswith(_UNSIGNED):
        raise auth_error(
            "bad-signature",
            f"X-Amz-Content-SHA256 must be the SHA-256 of the body: {service} does not take "
            "an unsigned payload",
            service,
        )
    if claimed != hashlib.sha256(incoming.body).hexdigest():
        raise ApiError(
            "XAmzContentSHA256Mismatch" if service == "s3" else "InvalidSignatureException",
            "The provided 'x-amz-content-sha256' header does not match what was computed.",
            400,
        )


def verify(incoming: Incoming, keys: Keys) -> Signed:
    """The request's region and service if ``keys`` signed it; an :class:`ApiError` if not."""
    header = incoming.headers.get("authorization")
    scope = scope_of(header)
    service = scope[1] if scope else None
    m = _AUTH_RE.match(header or "")
    cred = _SCOPE_RE.match(m["cred"]) if m else None
    if m is None or cred is None:
        raise auth_error("missing", "Missing or malformed SigV4 Authorization header", service)
    if not hmac.compare_digest(cred["key"], keys.access_key):
        raise auth_error(
            "unknown-key", "The security token included in the request is invalid.", service
        )
    signed = m["signed"].split(";")
    if "host" not in signed or not all(_HEADER_NAME.match(n) for n in signed):
        raise auth_error("bad-signature", "SignedHeaders must include host", service)
    stamp = _timestamp(incoming.headers, service)
    if stamp[:8] != cred["date"]:
        raise auth_error("bad-signature", "Credential date does not match X-Amz-Date", service)
    expected = signature(keys, incoming, signed, (stamp, cred["region"], cred["service"]))
    if not hmac.compare_digest(expected, m["sig"]):
        raise auth_error(
            "bad-signature",
            "The request signature we calculated does not match the signature you provided.",
            service,
        )
    _check_payload(incoming, cred["service"])
    return Signed(cred["region"], cred["service"])
