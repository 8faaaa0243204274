"""Botocore failures become one line: credentials, endpoints, service errors, unknown jobs."""

from __future__ import annotations

import pytest
from botocore.exceptions import ClientError, EndpointConnectionError, NoCredentialsError

from smmpi.aws.errors import (
    MISSING_BUCKET,
    MISSING_KEY,
    NotConfigured,
    UnknownJob,
    aws_errors,
    error_code,
    error_line,
)
from smmpi.errors import SmmpiError


def _client_error(code: str, message: str, operation: str = "DescribeTrainingJob") -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": message}}, operation)


def test_error_line_and_code() -> None:
    err = _client_error("AccessDenied", "not allowed")
    assert error_line(err) == "AccessDenied: not allowed"
    assert error_code(err) == "AccessDenied"
    assert error_code(ValueError("x")) == "ValueError"
    assert "no AWS credentials found" in error_line(NoCredentialsError())


def test_missing_sets() -> None:
    assert error_code(_client_error("404", "Not Found")) in MISSING_BUCKET & MISSING_KEY
    assert "NoSuchBucket" in MISSING_BUCKET and "NoSuchBucket" not in MISSING_KEY
    assert "NoSuchKey" in MISSING_KEY and "NoSuchKey" not in MISSING_BUCKET


@pytest.mark.parametrize(
    ("code", "message"),
    [
        ("ValidationException", "Requested resource not found."),
        ("ValidationException", "Could not find job"),
        ("ResourceNotFound", "gone"),
    ],
)
def test_not_found_for_a_job_is_unknown_job(code: str, message: str) -> None:
    with pytest.raises(UnknownJob) as info, aws_errors(job="my-job", region="us-west-2"):
        raise _client_error(code, message)
    assert str(info.value) == "unknown job: 'my-job': no such training job in us-west-2"
    assert info.value.exit_code == 2


def test_other_failures_are_one_line() -> None:
    with pytest.raises(SmmpiError) as info, aws_errors(job="my-job"):
        raise _client_error("ThrottlingException", "slow down")
    assert str(info.value) == "DescribeTrainingJob: ThrottlingException: slow down"
    with pytest.raises(NotConfigured) as missing, aws_errors():
        raise NoCredentialsError()
    assert missing.value.exit_code == 2
    with (
        pytest.raises(SmmpiError, match=r"^cannot reach AWS: http://127\.0\.0\.1:9$"),
        aws_errors(),
    ):
        raise EndpointConnectionError(endpoint_url="http://127.0.0.1:9")


def test_an_answer_not_in_the_apis_format_is_named_by_its_http_status() -> None:
    """A proxy's or load balancer's page (no error code botocore could read) is named by its
    status and the status's standard phrase."""
    for status, phrase in ((503, "Service Unavailable"), (502, "Bad Gateway")):
        response = {"Error": {"Code": "Unknown"}, "ResponseMetadata": {"HTTPStatusCode": status}}
        err = ClientError(response, "DescribeTrainingJob")  # type: ignore[arg-type]
        assert error_line(err) == f"{status}: {phrase}"
