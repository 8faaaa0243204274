"""Requests a client should never send, built by hand: signed (or not) with botocore's signer."""

from __future__ import annotations

import http.client
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from tests.serve.serving import REGION


@dataclass
class Raw:
    """One HTTP request: what is signed, and what is changed after signing."""

    service: str = "sagemaker"
    target: str | None = "SageMaker.CreateTrainingJob"
    body: bytes = b"{}"
    method: str = "POST"
    path: str = "/"
    region: str = REGION
    keys: tuple[str, str] | None = None  # None: serve's own
    sign: bool = True
    after: Callable[[dict[str, str]], None] | None = None  # change headers after signing
    tamper_body: bytes | None = None
    extra: dict[str, str] = field(default_factory=dict)
    shape: str | None = None  # the error's protocol: "json" or "xml" (None: the signed service's)


def params(**fields: Any) -> bytes:
    return json.dumps(fields).encode()


def send(url: str, own: tuple[str, str], raw: Raw) -> tuple[int, dict[str, str], bytes]:
    parts = urlsplit(url)
    headers = {"Content-Type": "application/x-amz-json-1.1", **raw.extra}
    if raw.target is not None:
        headers["X-Amz-Target"] = raw.target
    request = AWSRequest(method=raw.method, url=f"{url}{raw.path}", data=raw.body, headers=headers)
    if raw.sign:
        access, secret = raw.keys or own
        SigV4Auth(Credentials(access, secret), raw.service, raw.region).add_auth(request)
    final = dict(request.headers.items())
    if raw.after is not None:
        raw.after(final)
    body = raw.body if raw.tamper_body is None else raw.tamper_body
    final["Content-Length"] = str(len(body))
    conn = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=30)
    try:
        conn.request(raw.method, raw.path, body=body, headers=final)
        response = conn.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    finally:
        conn.close()
