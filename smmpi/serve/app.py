"""The WSGI application: every request verified, then answered by smmpi or by moto.

The service comes from the SigV4 credential scope: ``sagemaker`` goes to
smmpi's training-job operations (by ``X-Amz-Target``), ``monitoring`` to the
jobs' metrics in CloudWatch (:mod:`.cloudwatch`); S3, CloudWatch Logs,
STS, IAM and CloudFormation go to moto's server app for that service, in this
process. Nothing is read past a size limit, nothing runs for a request serve
did not sign-check, and moto's own control API (``/moto-api``) is not served. A key
serve minted for a running ``@remote`` job reaches S3 under that job's folder only
(:mod:`.job_keys`); on the job's own endpoint, inside its instances, nothing else signs.
"""

from __future__ import annotations

import io
import json
import sys
import traceback
from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import Any
from urllib.parse import quote

from smmpi.serve import operations, routing
from smmpi.serve.auth import Incoming, Signed, access_key_of, scope_of, verify
from smmpi.serve.calls import Call
from smmpi.serve.errors import ApiError, Response, auth_error, render
from smmpi.serve.iam import refuse_denied
from smmpi.serve.job_keys import JobKeys, check_reach
from smmpi.serve.journal import changes, new_seed, seeded
from smmpi.serve.state import Keys

MOTO_SERVICES = frozenset({"s3", "logs", "sts", "iam", "cloudformation"})
MAX_BODY = {"s3": 512 << 20}  # bytes; every other service's requests stay under 1 MiB
DEFAULT_MAX_BODY = 1 << 20
_READS = ("GET", "HEAD")
JOB_ENVIRON = "smmpi.job"  # the job whose own endpoint a request came in on
_JSON = "application/x-amz-json-1.1"
_STATUS_TEXT = {
    200: "OK",
    400: "Bad Request",
    403: "Forbidden",
    411: "Length Required",
    413: "Payload Too Large",
    500: "Internal Server Error",
}

StartResponse = Callable[..., Any]


def _headers(environ: dict[str, Any]) -> dict[str, str]:
    found = {
        k[5:].lower().replace("_", "-"): str(v) for k, v in environ.items() if k.startswith("HTTP_")
    }
    for key, name in (("CONTENT_TYPE", "content-type"), ("CONTENT_LENGTH", "content-length")):
        if environ.get(key):
            found[name] = str(environ[key])
    return found


def _raw_target(environ: dict[str, Any]) -> tuple[str, str]:
    raw = environ.get("RAW_URI") or environ.get("REQUEST_URI")
    if raw:
        path, _, query = str(raw).partition("?")
        if path.startswith("/"):
            return path, query
    return quote(str(environ.get("PATH_INFO") or "/")), str(environ.get("QUERY_STRING") or "")


def _read_body(environ: dict[str, Any], service: str | None) -> bytes:
    length_text = str(environ.get("CONTENT_LENGTH") or "")
    if not length_text:
        if environ.get("HTTP_TRANSFER_ENCODING"):
            raise ApiError("MissingContentLength", "Content-Length is required", 411)
        return b""
    if not length_text.isdigit():
        raise ApiError("InvalidRequest", "Content-Length must be a number", 400)
    length = int(length_text)
    limit = MAX_BODY.get(service or "", DEFAULT_MAX_BODY)
    if length > limit:
        raise ApiError(
            "RequestEntityTooLarge", f"The request body is larger than {limit} bytes", 413
        )
    body: bytes = environ["wsgi.input"].read(length)
    if len(body) != length:
        raise ApiError("IncompleteBody", "The request body ended before Content-Length", 400)
    return body


class App:
    """serve's WSGI app: ``jobs`` answers SageMaker; ``written`` hears of every request moto
    answered that may have changed something (with the answer's HTTP status)."""

    def __init__(
        self,
        keys: Keys,
        jobs: operations.Jobs,
        written: Callable[[Call, int], None],
        job_streams: Callable[[str, bytes, str], bytes | None] = lambda *args: None,
        monitoring: Callable[[Incoming, str], Response] | None = None,
        job_keys: JobKeys | None = None,
    ) -> None:
        self.keys, self.jobs, self.written = keys, jobs, written
        self.job_keys = job_keys or JobKeys()  # the keys of the @remote jobs running now
        self.monitoring = monitoring  # CloudWatch's training metrics (cloudwatch.answer)
        self.job_streams = job_streams  # smmpi's answers about jobs' streams (JobLogs.job_streams)
        self._moto: dict[str, Any] = {}

    def moto_app(self, service: str) -> Any:
        app = self._moto.get(service)
        if app is None:
            from moto.moto_server.werkzeug_app import create_backend_app

            app = self._moto[service] = create_backend_app(service)  # type: ignore[arg-type]
        return app

    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        scope = scope_of(environ.get("HTTP_AUTHORIZATION"))
        service = scope[1] if scope else None  # errors are in its protocol's shape...
        try:
            body = _read_body(environ, service)
            path, query = _raw_target(environ)
            method = str(environ.get("REQUEST_METHOD", "GET")).upper()
            incoming = Incoming(method, path, query, _headers(environ), body)
            operation = routing.operation_service(incoming)
            service = operation or service  # ...or the operation's, where the request names one
            return self._dispatch(environ, start_response, incoming, operation)
        except ApiError as err:
            return self._respond(start_response, render(err, service))
        except Exception:  # a bug must not take the server down, nor leak a trace to clients
            traceback.print_exc(file=sys.stderr)
            error = ApiError("InternalFailure", "smmpi serve could not process the request", 500)
            return self._respond(start_response, render(error, service))

    def _respond(self, start_response: StartResponse, response: Response) -> list[bytes]:
        status, headers, body = response
        start_response(f"{status} {_STATUS_TEXT.get(status, 'Error')}",
                       [*headers, ("Content-Length", str(len(body)))])  # fmt: skip
        return [body]

    def _dispatch(
        self,
        environ: dict[str, Any],
        start_response: StartResponse,
        incoming: Incoming,
        operation: str | None,
    ) -> Iterable[bytes]:
        method, path, query, body = incoming.method, incoming.path, incoming.query, incoming.body
        signed = self._verify(environ, incoming)
        routing.check_service(operation, signed.service)
        if signed.service == "sagemaker":
            routing.check_region(signed.region, signed.service)
            return self._respond(
                start_response, self._sagemaker(environ, method, path, body, signed.region)
            )
        if signed.service == "monitoring" and self.monitoring is not None:
            routing.check_region(signed.region, signed.service)
            return self._respond(start_response, self.monitoring(incoming, signed.region))
        if signed.service not in MOTO_SERVICES:
            raise ApiError("UnknownOperationException",
                           f"smmpi serve does not serve {signed.service!r}; it serves sagemaker, "
                           + ", ".join(sorted(MOTO_SERVICES | {"monitoring"})))  # fmt: skip
        routing.check_region(signed.region, signed.service)
        if path.startswith(("/moto-api", "/latest/")):
            raise ApiError("AccessDenied", "moto's control API is not served", 403)
        if signed.service == "s3":
            routing.check_key(incoming)
        target = str(environ.get("HTTP_X_AMZ_TARGET") or "")
        if signed.service == "logs":
            streams = self.job_streams(target, body, signed.region)
            if streams is not None:
                return self._respond(start_response, (200, [("Content-Type", _JSON)], streams))
        environ["wsgi.input"] = io.BytesIO(body)
        environ["CONTENT_LENGTH"] = str(len(body))
        status: list[str] = []

        def heard(code: str, headers: list[tuple[str, str]], *exc: Any) -> Any:
            status.append(code)
            return start_response(code, headers, *exc)

        call = Call(signed.service, signed.region, method, path, query,
                    str(environ.get("CONTENT_TYPE") or ""), target, body)  # fmt: skip
        refuse_denied(call)  # what moto does not implement, IAM refuses serve's caller
        if changes(call):  # kept: answered with ids the journal's replay gives again
            call = replace(call, seed=new_seed())
        with seeded(call.seed):
            answer = self.moto_app(signed.service)(environ, heard)
        if method not in _READS or target:
            self.written(call, int(status[-1][:3]) if status and status[-1][:3].isdigit() else 0)
        return answer  # type: ignore[no-any-return]

    def _verify(self, environ: dict[str, Any], incoming: Incoming) -> Signed:
        """Signed by serve's key, or by a job's (and within its reach); on a job's own
        endpoint (``JOB_ENVIRON``), by that job's key only."""
        minted = self.job_keys.find(access_key_of(incoming.headers.get("authorization")))
        job = environ.get(JOB_ENVIRON)
        if job is not None and (minted is None or minted.job != job):
            scope = scope_of(incoming.headers.get("authorization"))
            raise auth_error(
                "unknown-key", "The AWS Access Key Id you provided does not exist in our "
                "records.", scope[1] if scope else "s3",
            )  # fmt: skip
        signed = verify(incoming, minted.keys if minted else self.keys)
        if minted is not None:
            check_reach(minted, incoming, signed.service)
        return signed

    def _sagemaker(
        self, environ: dict[str, Any], method: str, path: str, body: bytes, region: str
    ) -> Response:
        target = str(environ.get("HTTP_X_AMZ_TARGET") or "")
        if method != "POST" or path != "/" or not target:
            raise ApiError(
                "UnknownOperationException", "SageMaker operations are POST / with X-Amz-Target"
            )
        try:
            params = json.loads(body or b"{}")
        except (ValueError, UnicodeDecodeError, RecursionError):
            raise ApiError("SerializationException", "The request body is not valid JSON") from None
        answer = operations.call(self.jobs, target, params, region)
        data = answer if isinstance(answer, bytes) else json.dumps(answer, default=str).encode()
        return 200, [("Content-Type", _JSON)], data
