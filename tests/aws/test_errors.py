"""Botocore failures become one line: credentials, endpoints, service errors, unknown jobs."""

from __future__ import annotations

from pathlib import Path

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
    scrub,
)
from smmpi.errors import SmmpiError
from tests.helpers import base_env, free_port, smmpi


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


def test_an_endpoints_password_is_never_in_a_line(monkeypatch: pytest.MonkeyPatch) -> None:
    """``user:password@`` in a URL is cut from every line, and so is the password itself
    wherever the message repeats it, as credentials' values are."""
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://user:Pa55-w0rd-x@127.0.0.1:9")
    line = scrub("could not reach http://user:Pa55-w0rd-x@127.0.0.1:9/ (password Pa55-w0rd-x)")
    assert "Pa55-w0rd-x" not in line and "user:" not in line, line
    assert line.startswith("could not reach http://***@127.0.0.1:9/"), line
    assert "https://***@h/x" in scrub("see https://other:secret@h/x")


@pytest.mark.parametrize("command", [["jobs"], ["status", "some-job"], ["doctor"]])
def test_no_command_prints_the_password_of_aws_endpoint_url(
    tmp_path: Path, command: list[str]
) -> None:
    env = base_env(tmp_path)
    env.update(
        AWS_ENDPOINT_URL=f"http://smmpi:Hunter2-endpoint-pw@127.0.0.1:{free_port()}",
        AWS_ACCESS_KEY_ID="AKIAEXAMPLEEXAMPLE12",
        AWS_SECRET_ACCESS_KEY="testing-secret-do-not-print",
        AWS_REGION="us-west-2",
    )
    result = smmpi(command, env, timeout=180)
    output = result.stdout + result.stderr
    assert "127.0.0.1" in output, output  # the endpoint is named...
    assert "Hunter2-endpoint-pw" not in output and "smmpi:Hunter2" not in output, output
    assert "***@127.0.0.1" in output, output  # ...without its password
