"""SigV4 verification: the signature a request carries, recomputed with botocore's own signer.

serve accepts one key pair, its own (:mod:`.state`). For each request it
parses the ``Authorization`` header, refuses another access key, then signs
the request again with botocore's :class:`~botocore.auth.SigV4Auth` (limited
to the headers the client signed, at the client's timestamp) and compares
the two signatures in constant time. A body whose ``X-Amz-Content-SHA256``
does not match what arrived is refused too.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any
from urllib.parse import parse_qsl, quote

from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest, HTTPHeaders
from botocore.credentials import Credentials
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


class _Verifier(SigV4Auth):
    """botocore's signer, restricted to what the client signed."""

    def __init__(self, keys: Keys, service: str, region: str, signed: list[str]) -> None:
        super().__init__(Credentials(keys.access_key, keys.secret_key), service, region)
        self.signed, self.service = signed, service

    def headers_to_sign(self, request: Any) -> HTTPHeaders:
        chosen = HTTPHeaders()
        for name in self.signed:
            chosen[name] = request.headers.get(name, "")
        return chosen

    def _normalize_url_path(self, path: str) -> str:
        if self.service == "s3":
            return path  # S3 signs the path as sent (botocore's S3SigV4Auth)
        return quote(normalize_url_path(path), safe="/~")


def _timestamp(headers: dict[str, str], service: str | None) -> str:
    stamp = headers.get("x-amz-date", "")
    try:
        when = datetime.strptime(stamp, "%Y%m%dT%H%M%SZ").replace(tzinfo=timezone.utc)
    except ValueError:
        raise auth_error("missing", "X-Amz-Date is missing or malformed", service) from None
    if abs((datetime.now(timezone.utc) - when).total_seconds()) > MAX_SKEW:
        raise auth_error("expired", "Signature expired: X-Amz-Date is too far from now", service)
    return stamp


def _check_payload(incoming: Incoming, service: str) -> None:
    claimed = incoming.headers.get("x-amz-content-sha256")
    if claimed is None or claimed.startswith(_UNSIGNED):
        return
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
    verifier = _Verifier(keys, cred["service"], cred["region"], signed)
    request = AWSRequest(
        method=incoming.method,
        url=f"http://{incoming.headers.get('host', '')}{incoming.path}",
        headers={k: v for k, v in incoming.headers.items() if k in signed},
        data=incoming.body,
    )
    if "x-amz-content-sha256" in incoming.headers:
        request.headers["X-Amz-Content-SHA256"] = incoming.headers["x-amz-content-sha256"]
    request.params = parse_qsl(incoming.query, keep_blank_values=True)  # type: ignore[assignment]
    request.context["timestamp"] = stamp
    expected = verifier.signature(
        verifier.string_to_sign(request, verifier.canonical_request(request)), request
    )
    if not hmac.compare_digest(expected, m["sig"]):
        raise auth_error(
            "bad-signature",
            "The request signature we calculated does not match the signature you provided.",
            service,
        )
    _check_payload(incoming, cred["service"])
    return Signed(cred["region"], cred["service"])
