"""The service a request asks for, told from the request itself, and the checks on its scope."""

from __future__ import annotations

import pytest

from smmpi.serve.auth import Incoming
from smmpi.serve.errors import ApiError
from smmpi.serve.routing import (
    MAX_KEY_BYTES,
    check_key,
    check_region,
    check_service,
    known_regions,
    operation_service,
)

FORM = {"content-type": "application/x-www-form-urlencoded; charset=utf-8"}


def _asking(path: str = "/", query: str = "", body: bytes = b"", **headers: str) -> Incoming:
    named = {k.replace("_", "-"): v for k, v in headers.items()}
    return Incoming("POST", path, query, named, body)


@pytest.mark.parametrize(
    ("incoming", "service"),
    [
        (_asking(x_amz_target="SageMaker.DescribeTrainingJob"), "sagemaker"),
        (_asking(x_amz_target="Logs_20140328.GetLogEvents"), "logs"),
        (_asking(x_amz_target="GraniteServiceVersion20100801.ListMetrics"), "monitoring"),
        (_asking("/service/GraniteServiceVersion20100801/operation/GetMetricData"), "monitoring"),
        (_asking(body=b"Action=GetCallerIdentity&Version=2011-06-15", **FORM), "sts"),
        (_asking(query="Action=GetRole&Version=2010-05-08"), "iam"),
        (_asking(host="sts.us-west-2.amazonaws.com"), "sts"),
        (_asking(host="bucket.s3-us-west-2.amazonaws.com:443"), "s3"),
        (_asking("/bucket/key", host="127.0.0.1:8080"), None),  # S3's REST: the signed one's
        (_asking(query="Action=GetRole&Version=1999-01-01"), None),
    ],
)
def test_the_operations_service_comes_from_the_request(
    incoming: Incoming, service: str | None
) -> None:
    assert operation_service(incoming) == service


def test_a_scope_of_another_service_or_an_unknown_region_is_refused() -> None:
    check_service(None, "s3")
    check_service("sagemaker", "sagemaker")
    with pytest.raises(ApiError) as wrong:
        check_service("sagemaker", "s3")
    assert (wrong.value.code, wrong.value.status) == ("InvalidSignatureException", 403)
    assert "scoped to correct service: 'sagemaker'" in wrong.value.message
    assert "us-west-2" in known_regions("sagemaker") and "us-west-2" in known_regions("iam")
    check_region("eu-west-1", "sagemaker")
    with pytest.raises(ApiError, match="scoped to a valid region, not 'moon-1'"):
        check_region("moon-1", "sagemaker")


def test_an_s3_key_longer_than_s3_allows_is_refused() -> None:
    check_key(_asking("/bucket/" + "k" * MAX_KEY_BYTES, host="127.0.0.1:8080"))
    with pytest.raises(ApiError) as long:
        check_key(_asking("/bucket/" + "é" * (MAX_KEY_BYTES // 2 + 1), host="127.0.0.1:8080"))
    assert (long.value.code, long.value.status) == ("KeyTooLongError", 400)
