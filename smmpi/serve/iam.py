"""IAM operations serve answers as IAM does for a caller without the permission.

moto does not implement ``SimulatePrincipalPolicy``. Serve's caller is not allowed
to simulate policies, and IAM says so: ``AccessDenied`` (HTTP 403, IAM's XML error),
which clients read as "permission verdict unknown" and go on (SDK v3's role check).
"""

from __future__ import annotations

from urllib.parse import parse_qs

from smmpi.serve.calls import Call, operation
from smmpi.serve.errors import ApiError
from smmpi.serve.job_records import ACCOUNT

#: The caller moto names for serve's keys (STS GetCallerIdentity's answer).
CALLER = f"arn:aws:sts::{ACCOUNT}:user/moto"
DENIED = frozenset({"SimulatePrincipalPolicy"})
_MAX_ARN = 2048  # PolicySourceArn's longest (IAM's model)


def _policy_source(call: Call) -> str:
    form = call.query
    if call.content_type.startswith("application/x-www-form-urlencoded"):
        form = call.body.decode("utf-8", "replace")
    found = parse_qs(form).get("PolicySourceArn") or [""]
    return found[0][:_MAX_ARN]


def refuse_denied(call: Call) -> None:
    """IAM's ``AccessDenied`` for an IAM operation serve's caller may not call."""
    if call.service != "iam":
        return
    action = operation(call)
    if action in DENIED:
        raise ApiError(
            "AccessDenied",
            f"User: {CALLER} is not authorized to perform: iam:{action} on resource: "
            f"{_policy_source(call) or '*'}",
            403,
        )
