"""serve's HTTP front: a poller keeps its connection; SigV4 is checked as botocore signs."""

from __future__ import annotations

import http.client
import json
import random
import socket
import string
from pathlib import Path
from typing import Any

import pytest
from botocore.auth import S3SigV4Auth, SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from smmpi.serve import Server
from smmpi.serve.auth import Incoming, verify
from smmpi.serve.errors import ApiError
from smmpi.serve.state import Keys
from tests.serve.serving import REGION, ServeProcess

pytestmark = pytest.mark.aws


def _signed(url: str, keys: tuple[str, str], target: str, body: bytes) -> dict[str, str]:
    request = AWSRequest(
        method="POST",
        url=f"{url}/",
        data=body,
        headers={"X-Amz-Target": target, "Content-Type": "application/x-amz-json-1.1"},
    )
    SigV4Auth(Credentials(*keys), "sagemaker", REGION).add_auth(request)
    return dict(request.headers.items())


def _connect(url: str) -> http.client.HTTPConnection:
    host, port = url[7:].split(":")
    return http.client.HTTPConnection(host, int(port), timeout=30)


def test_a_poller_keeps_its_connection_between_requests(serve: ServeProcess) -> None:
    keys = (serve.exports["AWS_ACCESS_KEY_ID"], serve.exports["AWS_SECRET_ACCESS_KEY"])
    conn = _connect(serve.url)
    local_ports = []
    try:
        for _ in range(5):
            body = b'{"MaxResults": 1}'
            conn.request(
                "POST", "/", body, _signed(serve.url, keys, "SageMaker.ListTrainingJobs", body)
            )
            answer = conn.getresponse()
            assert answer.status == 200, answer.read()
            assert "TrainingJobSummaries" in json.loads(answer.read())
            assert (answer.getheader("Connection") or "").lower() != "close"
            assert conn.sock is not None
            local_ports.append(conn.sock.getsockname()[1])
    finally:
        conn.close()
    assert len(set(local_ports)) == 1, local_ports  # one TCP connection for every request


def test_a_body_refused_unread_closes_the_connection(serve: ServeProcess) -> None:
    """The bytes the app did not read must never be taken for the next request."""
    host, port = serve.url[7:].split(":")
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        head = (
            f"POST / HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Length: {64 << 20}\r\n"
            "X-Amz-Target: SageMaker.ListTrainingJobs\r\n\r\n"
        )
        sock.sendall(head.encode() + b"GET /smuggled HTTP/1.1\r\n\r\n")
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    status, _, rest = answer.partition(b"\r\n")
    assert status.split()[1] in (b"403", b"413"), status
    assert b"Connection: close" in rest.split(b"\r\n\r\n")[0]
    assert answer.count(b"HTTP/1.1 ") == 1  # nothing answered the smuggled request


def test_stopping_the_server_ends_connections_kept_alive(tmp_path: Path) -> None:
    server = Server(state=tmp_path / "state").start()
    keys = (server.keys.access_key, server.keys.secret_key)
    conn = _connect(server.url)
    try:
        body = b"{}"
        conn.request("POST", "/", body, _signed(server.url, keys, "SageMaker.ListTags", body))
        conn.getresponse().read()
        sock = conn.sock
        assert sock is not None
        server.stop()
        sock.settimeout(10)
        assert sock.recv(100) == b""  # closed by the server, not left to a daemon thread
    finally:
        server.stop()
        conn.close()


_KEYS = Keys("AKIA" + "Q" * 16, "s" * 40)


def _random_request(rng: random.Random) -> tuple[AWSRequest, str]:
    service = rng.choice(["s3", "sagemaker", "logs", "iam", "sts"])
    alphabet = string.ascii_letters + string.digits + "-_.~ /%+=&?!$'()*,;:@é"
    path = "/" + "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 30)))
    params = {
        "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 8))): "".join(
            rng.choice(alphabet) for _ in range(rng.randint(0, 8))
        )
        for _ in range(rng.randint(0, 4))
    }
    body = bytes(rng.randrange(256) for _ in range(rng.randint(0, 200)))
    headers = {"Content-Type": rng.choice(["application/x-amz-json-1.1", "a  b\t c"])}
    if rng.random() < 0.5:
        headers["X-Amz-Target"] = "  SageMaker.ListTrainingJobs  "
    url = f"http://127.0.0.1:8765{_quote_path(path)}"
    request = AWSRequest(method=rng.choice(["GET", "PUT", "POST"]), url=url, data=body,
                         headers=headers, params=params)  # fmt: skip
    signer: Any = S3SigV4Auth if service == "s3" else SigV4Auth
    signer(Credentials(_KEYS.access_key, _KEYS.secret_key), service, REGION).add_auth(request)
    return request, service


def _quote_path(path: str) -> str:
    from urllib.parse import quote

    return quote(path, safe="/~")


def _incoming(request: AWSRequest) -> Incoming:
    prepared = request.prepare()
    _, _, rest = prepared.url.partition("://")
    target = "/" + rest.partition("/")[2]
    path, _, query = target.partition("?")
    headers = {k.lower(): v for k, v in prepared.headers.items()}
    headers["host"] = "127.0.0.1:8765"
    body = prepared.body if isinstance(prepared.body, bytes) else b""
    return Incoming(prepared.method, path, query, headers, body)


def test_every_request_botocore_signs_verifies_and_a_changed_one_does_not() -> None:
    rng = random.Random(20261124)
    for _ in range(300):
        request, service = _random_request(rng)
        incoming = _incoming(request)
        assert verify(incoming, _KEYS).service == service
        changed = Incoming(
            incoming.method, incoming.path, incoming.query + "&x=1", incoming.headers, b""
        )
        with pytest.raises(ApiError):
            verify(changed, _KEYS)
