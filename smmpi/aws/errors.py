"""Botocore failures as one line a user can act on; never a request, its headers or keys.

This is the one place where a service's answer becomes text for the user:
:func:`error_line`, :func:`aws_errors` and :func:`scrub` keep the error code
and the first line of its message, drop an HTML page's markup, remove every
credential (the variables' values, signatures, tokens, key ids) and cap the
length, whatever an endpoint echoes back.
"""

from __future__ import annotations

import html
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager, suppress

from smmpi.errors import SmmpiError

#: Error codes S3 answers for a bucket, or an object, that is not there.
MISSING_BUCKET = frozenset({"404", "NoSuchBucket", "NotFound"})
MISSING_KEY = frozenset({"404", "NoSuchKey", "NotFound"})
_NOT_FOUND = frozenset({"ResourceNotFound", "ResourceNotFoundException", "NoSuchKey", "404"})

#: The longest message of a service's error that is shown.
MESSAGE_CAP = 200
_SECRET_VARS = (
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_SECURITY_TOKEN",
)
#: A credential's name followed by its value (the value is replaced), and AWS key ids.
_NAMED_SECRET = re.compile(
    r"(?i)(credential|signature|security-token|authorization|token|secret\w*)([=:]\s*)\S+"
)
_KEY_ID = re.compile(r"\b(AKIA|ASIA|AROA|AIDA)[A-Z0-9]{12,}\b")
#: A URL's ``user:password@`` (an endpoint's, such as ``AWS_ENDPOINT_URL``'s).
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s@]*@")
_TAG = re.compile(r"<[^>]*>")
_BAD_HEADER = re.compile(r"(?i)invalid header (value|name)")
BAD_HEADER = (
    "a request header would hold a line break or a control character, from a credential or "
    "a setting (its value is not shown): check AWS_SESSION_TOKEN and the credentials' source"
)

NO_CREDENTIALS = (
    "no AWS credentials found: configure a profile (aws configure) or set "
    "AWS_PROFILE; `smmpi doctor` checks the setup"
)


class UnknownJob(SmmpiError):
    """No training job by that name in this account and region (exit 2: nothing ran)."""

    exit_code = 2

    def __init__(self, name: str, region: str | None = None) -> None:
        where = f" in {region}" if region else ""
        super().__init__(f"unknown job: {name!r}: no such training job{where}")


class NotConfigured(SmmpiError):
    """No AWS credentials or region (exit 2: found before anything was touched)."""

    exit_code = 2


def error_code(err: Exception) -> str:
    """The service's error code of a ClientError, else the exception's class name."""
    response = getattr(err, "response", None)
    if isinstance(response, dict):
        return str(response.get("Error", {}).get("Code", type(err).__name__))
    return type(err).__name__


def scrub(text: str, cap: int = MESSAGE_CAP) -> str:
    """One printable line of ``text``: markup dropped, no credential, at most ``cap`` characters."""
    if "<" in text:
        title = re.search(r"(?is)<(title|message)>(.*?)</\1>", text)
        text = title.group(2) if title else _TAG.sub(" ", text)
        text = html.unescape(text)
    if _BAD_HEADER.search(text):  # http.client quotes the header's value: maybe a credential
        return BAD_HEADER
    line = redact(next((ln.strip() for ln in text.splitlines() if ln.strip()), ""))
    line = _KEY_ID.sub("***", _NAMED_SECRET.sub(r"\1\2***", line))
    line = "".join(ch if ch.isprintable() else " " for ch in line)
    return line if len(line) <= cap else line[: cap - 3] + "..."


def _endpoint_secrets() -> list[str]:
    """The ``user:password`` (and the password alone) of every ``AWS_ENDPOINT_URL*`` variable."""
    found = []
    for var, value in os.environ.items():
        if var == "AWS_ENDPOINT_URL" or var.startswith("AWS_ENDPOINT_URL_"):
            userinfo = value.partition("://")[2].split("/", 1)[0].rpartition("@")[0]
            found += [userinfo, userinfo.partition(":")[2]]
    return [value for value in found if len(value) >= 4]


def redact(text: str) -> str:
    """``text`` without the credentials' values and without any URL's ``user:password@``."""
    for value in sorted(
        {os.environ.get(var, "").strip() for var in _SECRET_VARS} | {*_endpoint_secrets()},
        key=len,
        reverse=True,
    ):
        if len(value) >= 4:
            text = text.replace(value, "***")
    return _USERINFO.sub(r"\1***@", text)


def error_line(err: Exception) -> str:
    """``Code: message`` for a botocore failure (the credentials hint when there are none)."""
    from botocore.exceptions import NoCredentialsError, PartialCredentialsError

    if isinstance(err, (NoCredentialsError, PartialCredentialsError)):
        return NO_CREDENTIALS
    response = getattr(err, "response", None) or {}
    error = response.get("Error", {}) if isinstance(response, dict) else {}
    status = (response.get("ResponseMetadata") or {}).get("HTTPStatusCode")
    code, message = error.get("Code"), str(error.get("Message") or "")
    if code in (None, "", "Unknown") and status:  # an answer not in the API's format
        from http import HTTPStatus  # here: a local run never needs it

        code = str(status)
        with suppress(ValueError):  # a status with no standard phrase keeps its text
            message = HTTPStatus(int(status)).phrase
    if code:
        return scrub(f"{code}: {scrub(message)}" if message else str(code))
    text = str(err)
    if "Unable to parse response" in text:  # botocore could not read the endpoint's answer
        return "the endpoint's answer is not in the AWS API's format (an error page?)"
    return scrub(text) or type(err).__name__


def is_not_found(err: Exception) -> bool:
    """True when the service says the thing asked about is not there (a job, a key)."""
    response = getattr(err, "response", None)
    info = response.get("Error", {}) if isinstance(response, dict) else {}
    return _is_not_found(str(info.get("Code", "")), str(info.get("Message", "")))


def _is_not_found(code: str, message: str) -> bool:
    if code in _NOT_FOUND:
        return True
    lowered = message.lower()
    return code == "ValidationException" and (
        "not found" in lowered or "could not find" in lowered or "does not exist" in lowered
    )


@contextmanager
def aws_errors(job: str | None = None, region: str | None = None) -> Iterator[None]:
    """Turn botocore failures into one line; a job that is not there is :class:`UnknownJob`."""
    from botocore.exceptions import (
        BotoCoreError,
        ClientError,
        EndpointConnectionError,
        NoCredentialsError,
        PartialCredentialsError,
    )

    try:
        yield
    except (NoCredentialsError, PartialCredentialsError):
        raise NotConfigured(NO_CREDENTIALS) from None
    except EndpointConnectionError as err:
        where = scrub(str(err.kwargs.get("endpoint_url", err)))
        raise SmmpiError(f"cannot reach AWS: {where}") from None
    except ClientError as err:
        info = err.response.get("Error", {})
        code, message = str(info.get("Code", "")), str(info.get("Message", ""))
        if job is not None and _is_not_found(code, message):
            raise UnknownJob(job, region) from None
        raise SmmpiError(f"{err.operation_name}: {error_line(err)}") from None
    except BotoCoreError as err:
        raise SmmpiError(f"AWS call failed: {error_line(err)}") from None


_AWS_PACKAGES = ("botocore", "boto3", "s3transfer", "urllib3")


def is_aws_failure(err: BaseException) -> bool:
    """True for an exception of botocore, boto3, s3transfer or urllib3, or raised under them
    (``http.client`` refusing a header botocore built, for instance)."""
    if type(err).__module__.split(".")[0] in _AWS_PACKAGES:
        return True
    tb = err.__traceback__
    while tb is not None:
        if str(tb.tb_frame.f_globals.get("__name__", "")).split(".")[0] in _AWS_PACKAGES:
            return True
        tb = tb.tb_next
    return False
