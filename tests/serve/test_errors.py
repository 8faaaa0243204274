"""serve's errors in each protocol's shape, read back by botocore's own parsers."""

from __future__ import annotations

import pytest
from botocore.awsrequest import HeadersDict
from botocore.parsers import create_parser

from smmpi.serve.errors import ApiError, auth_error, family, not_found, render, validation

#: A service of each family, and the protocol botocore parses its answers with.
PROTOCOLS = {"sagemaker": "json", "logs": "json", "s3": "rest-xml", "sts": "query", "iam": "query"}


@pytest.mark.parametrize("service", list(PROTOCOLS))
def test_botocore_reads_the_code_and_message_back(service: str) -> None:
    error = ApiError("ValidationException", "a <bad> & 'quoted' value", 400)
    status, headers, body = render(error, service)
    response = {"status_code": status, "headers": HeadersDict(headers), "body": body}
    parsed = create_parser(PROTOCOLS[service]).parse(response, None)
    assert status == 400
    assert parsed["Error"]["Code"] == "ValidationException"
    assert parsed["Error"]["Message"] == "a <bad> & 'quoted' value"
    assert parsed["ResponseMetadata"]["RequestId"]


def test_each_family_names_an_auth_failure_as_its_clients_expect() -> None:
    assert [family(s) for s in ("s3", "sts", "cloudformation", "sagemaker", None)] == [
        "s3", "query", "query", "json", "json",
    ]  # fmt: skip
    unknown = auth_error("unknown-key", "no such key", "sagemaker")
    assert (unknown.code, unknown.status) == ("UnrecognizedClientException", 400)
    assert auth_error("unknown-key", "x", "s3").code == "InvalidAccessKeyId"
    assert auth_error("missing", "x", "sts").code == "MissingAuthenticationToken"
    assert auth_error("expired", "x", "s3").code == "RequestTimeTooSkewed"
    assert auth_error("bad-signature", "x", "iam").status == 403


def test_sagemakers_own_validation_and_not_found() -> None:
    assert (validation("bad").code, validation("bad").status) == ("ValidationException", 400)
    assert not_found().message == "Requested resource not found"
