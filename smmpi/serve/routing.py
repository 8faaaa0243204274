"""Which service a request is for, from the request itself; the regions botocore knows; S3's keys.

The signature's credential scope names a service and a region; AWS answers an
operation only when the scope names the operation's own service, in a region
that exists. The operation's service comes from what the request asks:
``X-Amz-Target`` for the JSON protocols (SageMaker, Logs, CloudWatch), the path
for CloudWatch's CBOR one, ``Action`` and ``Version`` for the query protocols (STS,
IAM, CloudFormation, CloudWatch's older one), and an AWS
host name (``sts.amazonaws.com``...) when it has one. A request that shows none
of them is S3's REST, or no operation at all: the signed service's own
handler answers it.
"""

from __future__ import annotations

import functools
from types import SimpleNamespace
from urllib.parse import parse_qsl, unquote

from smmpi.serve.auth import Incoming
from smmpi.serve.errors import ApiError, auth_error

#: The API version each query protocol's requests carry.
QUERY_VERSIONS = {"2011-06-15": "sts", "2010-05-08": "iam", "2010-05-15": "cloudformation",
                  "2010-08-01": "monitoring"}  # fmt: skip
_HOST_SERVICES = ("sagemaker", "logs", "sts", "iam", "cloudformation", "monitoring", "s3")
_CLOUDWATCH = "GraniteServiceVersion20100801"  # CloudWatch's JSON target and CBOR path
_FORM = "application/x-www-form-urlencoded"
MAX_KEY_BYTES = 1024  # S3's longest object key, in UTF-8 bytes


def _query_fields(incoming: Incoming) -> dict[str, str]:
    text = incoming.query
    if incoming.headers.get("content-type", "").startswith(_FORM):
        text = f"{text}&{incoming.body.decode('utf-8', 'replace')}"
    return dict(parse_qsl(text, keep_blank_values=True))


def _from_host(host: str) -> str | None:
    name = host.rsplit(":", 1)[0].lower()
    if not name.endswith((".amazonaws.com", ".amazonaws.com.cn")):
        return None
    for label in name.split("."):
        if label in _HOST_SERVICES or label.startswith("s3-"):
            return "s3" if label.startswith("s3") else label
    return None


def operation_service(incoming: Incoming) -> str | None:
    """The service whose operation ``incoming`` asks for; None when the request does not say."""
    target = incoming.headers.get("x-amz-target", "")
    if target.startswith("Logs_"):
        return "logs"
    if target.startswith("SageMaker."):
        return "sagemaker"
    if target.startswith(f"{_CLOUDWATCH}.") or incoming.path.startswith(f"/service/{_CLOUDWATCH}/"):
        return "monitoring"  # its JSON protocol, or its CBOR one
    if not target:
        fields = _query_fields(incoming)
        if "Action" in fields and fields.get("Version") in QUERY_VERSIONS:
            return QUERY_VERSIONS[fields["Version"]]
    return _from_host(incoming.headers.get("host", ""))


def check_service(operation: str | None, signed: str) -> None:
    """Refuse a signature whose scope names another service than the operation's, as AWS does."""
    if operation is not None and operation != signed:
        raise auth_error(
            "bad-signature", f"Credential should be scoped to correct service: '{operation}'.",
            operation,
        )  # fmt: skip


@functools.lru_cache(maxsize=8)
def known_regions(service: str) -> frozenset[str]:
    """The regions botocore's endpoint data lists for ``service`` (for a global service,
    such as IAM, every region of every partition), in every partition."""
    import botocore.session

    session = botocore.session.get_session()
    found: set[str] = set()
    for partition in session.get_available_partitions():
        found.update(session.get_available_regions(service, partition_name=partition))
    return frozenset(found) if found else known_regions("sts")


def check_region(region: str, service: str) -> None:
    if region not in known_regions(service):
        raise auth_error(
            "bad-signature", f"Credential should be scoped to a valid region, not '{region}'.",
            service,
        )  # fmt: skip


def check_key(incoming: Incoming) -> None:
    """An S3 object key longer than S3 allows is refused (``KeyTooLongError``), as S3 does."""
    from moto.s3.responses import S3Response

    host = incoming.headers.get("host", "")
    path = unquote(incoming.path)
    fake = SimpleNamespace(headers={"host": host}, url=f"http://{host}{incoming.path}")
    key = path[1:] if S3Response.subdomain_based_buckets(fake) else path[1:].partition("/")[2]
    if len(key.encode("utf-8", "surrogatepass")) > MAX_KEY_BYTES:
        raise ApiError("KeyTooLongError", "Your key is too long", 400)
