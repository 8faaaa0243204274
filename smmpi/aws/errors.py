"""Botocore failures as one line a user can act on; never a request, its headers or keys."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from smmpi.errors import SmmpiError

#: Error codes S3 answers for a bucket, or an object, that is not there.
MISSING_BUCKET = frozenset({"404", "NoSuchBucket", "NotFound"})
MISSING_KEY = frozenset({"404", "NoSuchKey", "NotFound"})
_NOT_FOUND = frozenset({"ResourceNotFound", "ResourceNotFoundException", "NoSuchKey", "404"})

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


def error_line(err: Exception) -> str:
    """``Code: message`` for a botocore failure (the credentials hint when there are none)."""
    from botocore.exceptions import NoCredentialsError, PartialCredentialsError

    if isinstance(err, (NoCredentialsError, PartialCredentialsError)):
        return NO_CREDENTIALS
    response = getattr(err, "response", None) or {}
    error = response.get("Error", {}) if isinstance(response, dict) else {}
    code, message = error.get("Code"), error.get("Message")
    return f"{code}: {message}" if code else str(err).splitlines()[0]


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
        raise SmmpiError(f"cannot reach AWS: {err.kwargs.get('endpoint_url', err)}") from None
    except ClientError as err:
        info = err.response.get("Error", {})
        code, message = str(info.get("Code", "")), str(info.get("Message", ""))
        if job is not None and _is_not_found(code, message):
            raise UnknownJob(job, region) from None
        raise SmmpiError(f"{err.operation_name}: {code}: {message}") from None
