"""An endpoint's error page is one line with the error's code, and never a credential.

A small endpoint answers every call 403 with a body that echoes the request's
headers (the signature, the key id and the session token) as an HTML page, a
JSON error or an XML error. Every command that calls AWS is run against it
as a subprocess: what smmpi prints must be one line, capped, with no
credential in it, whether smmpi knows the credentials (variables) or not (a
profile).
"""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.faults.test_settings_faults import IDS, JOB, JOB_COMMANDS, SUBMIT, TOKEN
from tests.helpers import MotoServer, smmpi

pytestmark = pytest.mark.aws


@pytest.fixture
def aws(moto_server: MotoServer, env: dict[str, str]) -> dict[str, str]:
    return {**env, **moto_server.aws_env()}


class EchoErrors(ThreadingHTTPServer):
    """Answers every call 403 with a body that echoes the request's headers."""

    def __init__(self, style: str) -> None:
        super().__init__(("127.0.0.1", 0), _Echo)
        self.style = style

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Echo(BaseHTTPRequestHandler):
    server: EchoErrors

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _answer(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        sent = "".join(f"{k}: {v}\n" for k, v in self.headers.items())
        one_line = sent.replace("\n", " ")
        signed_first = " ".join(f"{k}: {v}" for k, v in reversed(self.headers.items()))
        bodies = {
            "html": ("text/html", f"<html><head><title>403 Forbidden</title></head><pre>{sent}"),
            "json": (
                "application/x-amz-json-1.1",
                json.dumps(
                    {"__type": "AccessDeniedException", "Message": f"denied: {signed_first}"}
                ),
            ),
            "xml": (
                "text/xml",
                f"<Error><Code>AccessDenied</Code><Message>{one_line}</Message></Error>",
            ),
        }
        kind, body = bodies[self.server.style]
        data = body.encode()
        self.send_response(403)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_PUT = do_HEAD = do_DELETE = _answer


@pytest.fixture(params=["html", "json", "xml"])
def echo_errors(request: pytest.FixtureRequest) -> Iterator[EchoErrors]:
    server = EchoErrors(request.param)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("command", [*JOB_COMMANDS, SUBMIT], ids=[*IDS, "submit"])
def test_an_error_page_is_one_line_without_credentials(
    command: list[str], echo_errors: EchoErrors, tmp_path: Path, aws: dict[str, str]
) -> None:
    env = {**aws, "AWS_ENDPOINT_URL": echo_errors.url, "AWS_SESSION_TOKEN": TOKEN}
    done = smmpi(command, env, cwd=tmp_path, timeout=60)
    shown = done.stdout + done.stderr
    assert "Traceback" not in shown, shown
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 1 and len(lines) == 1, (done.returncode, lines)
    assert lines[0].startswith("smmpi: ") and len(lines[0]) <= 300, lines[0]
    named = ("403", "AccessDenied", "not in the AWS API's format")  # the code, or what it was
    assert any(n in lines[0] for n in named), lines[0]
    for secret in (TOKEN, aws["AWS_ACCESS_KEY_ID"], aws["AWS_SECRET_ACCESS_KEY"], "Signature="):
        assert secret not in shown, (secret, shown)


def test_credentials_from_a_profile_are_not_shown_either(
    echo_errors: EchoErrors, tmp_path: Path, aws: dict[str, str]
) -> None:
    """smmpi does not know these values: what looks like a key id or a signed header goes."""
    key_id, token = "AKIAPROFILEKEYID12345", "profile-token-do-not-print"
    credentials = tmp_path / "credentials"
    credentials.write_text(
        f"[default]\naws_access_key_id = {key_id}\n"
        f"aws_secret_access_key = profile-secret\naws_session_token = {token}\n"
    )
    env = {k: v for k, v in aws.items() if not k.startswith(("AWS_ACCESS", "AWS_SECRET"))}
    env.update(AWS_ENDPOINT_URL=echo_errors.url, AWS_SHARED_CREDENTIALS_FILE=str(credentials))
    done = smmpi(["status", JOB], env, cwd=tmp_path, timeout=60)
    assert done.returncode == 1 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    for secret in (key_id, token, "profile-secret"):
        assert secret not in done.stdout + done.stderr, (secret, done.stderr)


CREDENTIAL_PROCESS = """\
import json
import sys
print(json.dumps({"Version": 1, "AccessKeyId": "AKIDPROCESS", "SecretAccessKey": "process-secret",
                  "SessionToken": "tok\\r\\nX-Injected: SECRET-PART"}))
"""


@pytest.mark.parametrize("command", [*JOB_COMMANDS, SUBMIT], ids=[*IDS, "submit"])
def test_a_line_break_in_a_token_from_a_credential_process_is_not_shown(
    command: list[str], tmp_path: Path, aws: dict[str, str]
) -> None:
    """A token smmpi cannot check before the call: http.client's refusal quotes it."""
    script = tmp_path / "credentials.py"
    script.write_text(CREDENTIAL_PROCESS)
    config = tmp_path / "aws-config"
    config.write_text(f"[default]\ncredential_process = {sys.executable} {script}\n")
    env = {k: v for k, v in aws.items() if not k.startswith(("AWS_ACCESS", "AWS_SECRET"))}
    env["AWS_CONFIG_FILE"] = str(config)
    done = smmpi(command, env, cwd=tmp_path, timeout=60)
    assert "Traceback" not in done.stderr, done.stderr
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 1 and len(lines) == 1, (done.returncode, lines)
    assert "line break" in lines[0], lines[0]
    for secret in ("SECRET-PART", "process-secret", "AKIDPROCESS"):
        assert secret not in done.stdout + done.stderr, (secret, done.stderr)
