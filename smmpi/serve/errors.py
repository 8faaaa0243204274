"""Errors in the shape each client's parser expects: JSON for SageMaker and Logs, XML for the rest.

botocore reads ``__type`` and ``message`` from a JSON protocol's body, ``Error/Code`` from
S3's XML and ``ErrorResponse/Error/Code`` from the query protocols (STS, IAM,
CloudFormation); a client sees serve's errors exactly as it would AWS's.
"""

from __future__ import annotations

import json
import uuid
from xml.sax.saxutils import escape

JSON_SERVICES = frozenset({"sagemaker", "logs"})
QUERY_SERVICES = frozenset({"sts", "iam", "cloudformation"})

Response = tuple[int, list[tuple[str, str]], bytes]


class ApiError(Exception):
    """An API error: its code (``__type``), message and HTTP status."""

    def __init__(self, code: str, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.code, self.message, self.status = code, message, status


def validation(message: str) -> ApiError:
    return ApiError("ValidationException", message)


def not_found() -> ApiError:
    return ApiError("ValidationException", "Requested resource not found")


#: What each kind of authentication failure is called, per protocol family.
_AUTH_CODES = {
    "unknown-key": {
        "json": "UnrecognizedClientException",
        "s3": "InvalidAccessKeyId",
        "query": "InvalidClientTokenId",
    },
    "bad-signature": {
        "json": "InvalidSignatureException",
        "s3": "SignatureDoesNotMatch",
        "query": "SignatureDoesNotMatch",
    },
    "missing": {
        "json": "MissingAuthenticationTokenException",
        "s3": "AccessDenied",
        "query": "MissingAuthenticationToken",
    },
    "expired": {
        "json": "InvalidSignatureException",
        "s3": "RequestTimeTooSkewed",
        "query": "SignatureDoesNotMatch",
    },
}


def family(service: str | None) -> str:
    if service == "s3":
        return "s3"
    if service in QUERY_SERVICES:
        return "query"
    return "json"


def auth_error(kind: str, message: str, service: str | None) -> ApiError:
    status = 400 if kind == "unknown-key" and family(service) == "json" else 403
    return ApiError(_AUTH_CODES[kind][family(service)], message, status)


def render(error: ApiError, service: str | None) -> Response:
    """The HTTP response for ``error`` as ``service``'s clients parse it."""
    request_id = str(uuid.uuid4())
    kind = family(service)
    if kind == "json":
        body = json.dumps({"__type": error.code, "message": error.message}).encode()
        headers = [
            ("Content-Type", "application/x-amz-json-1.1"),
            ("x-amzn-RequestId", request_id),
            ("x-amzn-ErrorType", error.code),
        ]
        return error.status, headers, body
    code, message = escape(error.code), escape(error.message)
    if kind == "s3":
        xml = (
            '<?xml version="1.0" encoding="UTF-8"?>\n'
            f"<Error><Code>{code}</Code><Message>{message}</Message>"
            f"<RequestId>{request_id}</RequestId></Error>"
        )
    else:
        xml = (
            "<ErrorResponse><Error><Type>Sender</Type>"
            f"<Code>{code}</Code><Message>{message}</Message></Error>"
            f"<RequestId>{request_id}</RequestId></ErrorResponse>"
        )
    headers = [("Content-Type", "application/xml"), ("x-amz-request-id", request_id)]
    return error.status, headers, xml.encode()
