"""Where a job goes: role, bucket, region and VPC after smmpi's documented precedence.

Each comes from the job (a flag), then ``SMMPI_*`` variables, then the config
file; the region then from AWS's own settings (:mod:`smmpi.aws.clients`).
Offline (dry run), what is missing becomes a marked placeholder.
"""

from __future__ import annotations

import dataclasses
import json
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from smmpi import config
from smmpi.aws.clients import aws_region, configured_region
from smmpi.aws.facts import BUCKET_RE, BUCKET_RULE, REGION_RE, REGION_RULE, ROLE_ARN_RE, ROLE_RULE
from smmpi.errors import BadInput
from smmpi.spec import MPIJob, check_vpc_ids
from smmpi.spec.limits import check_region

if TYPE_CHECKING:
    import boto3

ROLE_PLACEHOLDER = "<role: set --role or SMMPI_ROLE>"
BUCKET_PLACEHOLDER = "<bucket: set --bucket or SMMPI_BUCKET>"
# Stand-ins the SDK accepts while building offline; swapped for the placeholders after.
_ROLE_SENTINEL = "arn:aws:iam::000000000000:role/smmpi-dry-run-role-placeholder"
_BUCKET_SENTINEL = "smmpi-dry-run-bucket-placeholder"
FALLBACK_REGION = "us-east-1"


def code_key(job_name: str, upload_id: str) -> str:
    """Where the source dir goes in the bucket: the SDK's layout plus this call's own id.

    The id makes the key one no other call writes, so a submit that fails can
    delete what it uploaded without ever touching another job's code.
    """
    return f"{job_name}/source/{upload_id}/sourcedir.tar.gz"


def new_upload_id() -> str:
    import secrets

    return secrets.token_hex(4)


@dataclass(frozen=True)
class Settings:
    """Where the job goes: role, bucket and region after the documented precedence."""

    role: str
    bucket: str
    region: str
    endpoint_url: str | None = None
    placeholders: dict[str, str] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    subnets: tuple[str, ...] = ()
    security_groups: tuple[str, ...] = ()


def _checked(name: str, value: str | None, pattern: Any, allowed: str) -> str | None:
    if value is not None and not pattern.match(value):
        source = f" (from {config.ENV_OF[name]} or {config.path()})"
        raise BadInput(name + source, value, allowed)
    return value


def resolve_settings(job: MPIJob, *, offline: bool) -> Settings:
    """Role, bucket, region: the job's value, then SMMPI_* env, then the config file.

    Offline (dry run) a missing role or bucket becomes a marked placeholder; a
    missing region falls back to AWS's config, then us-east-1, with a note.
    Online, a missing role is an error, and a missing bucket is named
    ``sagemaker-{region}-{account}`` (the SDK's default) from STS reached
    through the configured endpoint.
    """
    role = _checked("role", config.setting("role", job.role), ROLE_ARN_RE, ROLE_RULE)
    bucket = _checked("bucket", config.setting("bucket", job.bucket), BUCKET_RE, BUCKET_RULE)
    region = _checked("region", configured_region(job.region), REGION_RE, REGION_RULE)
    notes: list[str] = []
    region = region or aws_region()
    if region is not None and not REGION_RE.match(region):
        raise BadInput("region (from AWS_REGION or the AWS profile)", region, REGION_RULE)
    if region is None:
        if not offline:
            raise BadInput(
                "region",
                None,
                "a region: --region, SMMPI_REGION, AWS_REGION or an AWS profile with a region",
            )
        region = FALLBACK_REGION
        notes.append(
            f"region: none configured, showing {FALLBACK_REGION} (set --region or SMMPI_REGION)"
        )
    check_region(str(job.framework), str(job.framework_version), region)
    placeholders: dict[str, str] = {}
    if role is None:
        if not offline:
            raise BadInput(
                "role", None, "an IAM role ARN via --role, SMMPI_ROLE or `smmpi infra deploy`"
            )
        role, placeholders[_ROLE_SENTINEL] = _ROLE_SENTINEL, ROLE_PLACEHOLDER
    if bucket is None and offline:
        bucket, placeholders[_BUCKET_SENTINEL] = _BUCKET_SENTINEL, BUCKET_PLACEHOLDER
    subnets, groups = resolve_vpc(job)
    endpoint = os.environ.get("AWS_ENDPOINT_URL_SAGEMAKER") or os.environ.get("AWS_ENDPOINT_URL")
    return Settings(
        role=role,
        bucket=bucket or "",
        region=region,
        endpoint_url=endpoint,
        placeholders=placeholders,
        notes=tuple(notes),
        subnets=subnets,
        security_groups=groups,
    )


def resolve_vpc(job: MPIJob) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Subnets and security groups: each from the job (flag), else from the config file.

    ``smmpi infra deploy --vpc-id`` saves ``security_group_ids`` (and
    ``subnets`` when given), so jobs run in that VPC with no flags; a flag
    replaces the saved value of its own kind only. A VPC needs both.
    """
    saved = config.load()
    where = f" (from {config.path()})"
    subnets = tuple(job.subnets or ()) or check_vpc_ids("subnets", saved.get("subnets"), where)
    groups = tuple(job.security_groups or ()) or check_vpc_ids(
        "security_groups", saved.get("security_group_ids"), where
    )
    if bool(subnets) != bool(groups):
        missing = "security_groups" if subnets else "subnets"
        flag = "--security-group" if subnets else "--subnet"
        raise BadInput(
            missing,
            "(none)",
            f"subnets and security groups together (a VPC needs both): pass {flag} "
            f"or save it with `smmpi infra deploy --vpc-id`",
        )
    return subnets, groups


def account_and_bucket(settings: Settings, session: boto3.Session) -> Settings:
    """Fill in the default bucket ``sagemaker-{region}-{account}`` via an endpoint-honouring STS."""
    if settings.bucket:
        return settings
    account = session.client("sts").get_caller_identity()["Account"]
    bucket = f"sagemaker-{settings.region}-{account}"
    return dataclasses.replace(settings, bucket=bucket)


def restore_placeholders(request: dict[str, Any], placeholders: dict[str, str]) -> dict[str, Any]:
    if not placeholders:
        return request
    text = json.dumps(request)
    for sentinel, shown in placeholders.items():
        text = text.replace(sentinel, shown)
    restored: dict[str, Any] = json.loads(text)
    return restored
