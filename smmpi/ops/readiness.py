"""Is this machine ready to submit? The AWS half of ``smmpi doctor``, one :class:`Check` each.

Credentials (described by their source, never printed), region, the endpoint and the
account it answers for, and the role and bucket that ``smmpi infra deploy`` saved, each
seen to exist once a session is usable. A failing check says how to fix it.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from smmpi import config
from smmpi.aws.clients import resolve_region
from smmpi.aws.clients import session as aws_session
from smmpi.aws.errors import MISSING_BUCKET, error_code, redact


@dataclass(frozen=True)
class Check:
    """One line of ``smmpi doctor``: a check's name, its state, what it found, and the fix."""

    name: str
    state: str  # "ok" | "warn" | "fail"
    detail: str
    fix: str = ""

    def line(self) -> str:
        text = f"{self.state:<4}  {self.name:<11} {self.detail}"
        if self.fix and self.state != "ok":
            text += f"; fix: {self.fix}"
        return text


def _identity(session: Any, quick: Any, usable: bool) -> Check:
    """The endpoint answers STS with an account (only once credentials and region exist)."""
    endpoint = os.environ.get("AWS_ENDPOINT_URL")
    where = f"{redact(endpoint)} (AWS_ENDPOINT_URL)" if endpoint else "AWS public endpoints"
    if not usable:
        return Check(
            "endpoint", "warn", f"{where}; not contacted", "fix the credentials and region first"
        )
    try:
        ident = session.client("sts", config=quick).get_caller_identity()
    except Exception as err:  # any failure here is the user's to see, in one line
        return Check("endpoint", "fail", f"{where}: {error_code(err)}", _endpoint_fix(err, where))
    return Check("endpoint", "ok", f"{where}; account {ident['Account']}")


def _endpoint_fix(err: Exception, where: str) -> str:
    """Nothing answered (the address, the network), or the answer refused the credentials."""
    from botocore.exceptions import ClientError, HTTPClientError
    from botocore.exceptions import ConnectionError as NoConnection

    if isinstance(err, (NoConnection, HTTPClientError)):
        return f"check that {where} is reachable from here (the address, the network, a proxy)"
    if isinstance(err, ClientError):
        return "refresh the credentials (`aws sso login`, or new keys), or use another profile"
    return "refresh the credentials or check AWS_ENDPOINT_URL"


def aws_checks(region: str | None = None) -> list[Check]:
    """Credentials (by source only), region, endpoint and identity, role and bucket."""
    if importlib.util.find_spec("boto3") is None:
        return [Check("aws", "fail", "boto3 is not installed", "pip install 'smmpi[aws]'")]
    from botocore.config import Config

    quick = Config(connect_timeout=5, read_timeout=15, retries={"max_attempts": 2})
    session = aws_session(resolve_region(region))
    creds = session.get_credentials()
    checks = [
        Check("credentials", "ok", f"found (source: {creds.method})")
        if creds is not None
        else Check(
            "credentials",
            "fail",
            "none found",
            "run `aws configure` or `aws sso login`, or set AWS_PROFILE",
        ),
        Check("region", "ok", session.region_name)
        if session.region_name
        else Check(
            "region",
            "fail",
            "not set",
            "set AWS_REGION or SMMPI_REGION, or `smmpi infra deploy --region R`",
        ),
    ]
    checks.append(_identity(session, quick, creds is not None and bool(session.region_name)))
    verified = session if checks[-1].state == "ok" else None
    checks.append(_role_check(verified, quick))
    checks.append(_bucket_check(verified, quick))
    return checks


def _saved_check(
    name: str,
    value: str | None,
    session: Any,
    probe: Callable[[Any, str], object],
    missing: frozenset[str],
    allow: str,
) -> Check:
    """A saved role or bucket: configured, then (with a usable session) seen to exist.

    ``allow`` is the fix when the check could not be made (a missing permission).
    """
    fix = f"smmpi infra deploy (saves role and bucket), or pass --{name} / set SMMPI_{name.upper()}"
    if not value:
        return Check(name, "fail", "not configured", fix)
    if session is None:
        return Check(name, "warn", f"{value} (not verified)", "fix the AWS checks above")
    try:
        probe(session, value)
    except Exception as err:
        code = error_code(err)
        if code in missing:
            return Check(name, "fail", f"{value} does not exist", fix)
        return Check(name, "warn", f"{value} (cannot verify: {code})", allow)
    return Check(name, "ok", value)


def _role_check(session: Any, quick: Any) -> Check:
    def probe(s: Any, role: str) -> object:
        return s.client("iam", config=quick).get_role(RoleName=role.rsplit("/", 1)[-1])

    role = config.setting("role")
    allow = "allow iam:GetRole, or ignore if the role is known to exist"
    return _saved_check("role", role, session, probe, frozenset({"NoSuchEntity"}), allow)


def _bucket_check(session: Any, quick: Any) -> Check:
    def probe(s: Any, bucket: str) -> object:
        return s.client("s3", config=quick).head_bucket(Bucket=bucket)

    bucket = config.setting("bucket")
    allow = "allow s3:ListBucket on it, or ignore if it is known to exist"
    return _saved_check("bucket", bucket, session, probe, MISSING_BUCKET, allow)
