"""smmpi's CloudFormation stack: an execution role and a bucket users can trust.

``deploy`` creates or updates the stack from ``infra/smmpi.yaml`` and waits
for it; ``save_outputs`` writes the role ARN, bucket (and security group) into
smmpi's config so ``submit`` needs no ``--role``/``--bucket``. The functions
take a boto3 CloudFormation client, so tests drive them against a moto server.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from smmpi import config
from smmpi.aws.errors import aws_errors
from smmpi.aws.facts import SMMPI_TAG_KEY, SMMPI_TAG_VALUE
from smmpi.errors import BadInput, SmmpiError
from smmpi.ops.private_files import tighten_dir

DEFAULT_STACK = "smmpi"
STACK_NAME_RE = re.compile(r"^[a-zA-Z][-a-zA-Z0-9]{0,127}$")
_FAILED = ("FAILED", "ROLLBACK_COMPLETE", "ROLLBACK_FAILED")

#: Config keys ``save_outputs`` writes (``submit`` reads ``role``, ``bucket``, ``region``).
CONFIG_KEYS = ("role", "bucket", "region", "stack", "security_group_ids", "subnets")


def template_path() -> Path:
    """The template: inside the installed package, else the repository's ``infra/``."""
    package = Path(__file__).resolve().parent.parent
    for candidate in (package / "infra" / "smmpi.yaml", package.parent / "infra" / "smmpi.yaml"):
        if candidate.is_file():
            return candidate
    raise SmmpiError("infra/smmpi.yaml is missing from this installation of smmpi")


def check_inputs(
    stack: str,
    vpc_id: str | None = None,
    subnets: list[str] | None = None,
    retention_days: int | None = None,
) -> None:
    """Refuse bad values before CloudFormation is called."""
    if not STACK_NAME_RE.match(stack):
        raise BadInput("stack name", stack, "a letter, then up to 127 letters, digits, hyphens")
    if vpc_id is not None and not re.fullmatch(r"vpc-[0-9a-f]{8,17}", vpc_id):
        raise BadInput("vpc id", vpc_id, "vpc- followed by 8 or 17 hex digits")
    for subnet in subnets or []:
        if not re.fullmatch(r"subnet-[0-9a-f]{8,17}", subnet):
            raise BadInput("subnet", subnet, "subnet- followed by 8 or 17 hex digits")
    if subnets and vpc_id is None:
        raise BadInput("subnet", subnets[0], "only with --vpc-id (the subnets must be in it)")
    if retention_days is not None and retention_days < 1:
        raise BadInput("retention days", retention_days, "an integer >= 1")


def _stack(cfn: Any, stack: str) -> dict[str, Any] | None:
    from botocore.exceptions import ClientError

    try:
        with_stacks = cfn.describe_stacks(StackName=stack)
    except ClientError as err:
        if "does not exist" in str(err.response.get("Error", {}).get("Message", "")):
            return None
        raise
    stacks: list[dict[str, Any]] = with_stacks.get("Stacks", [])
    return stacks[0] if stacks else None


def _outputs(stack: dict[str, Any]) -> dict[str, str]:
    return {o["OutputKey"]: o["OutputValue"] for o in stack.get("Outputs", [])}


def _failure(cfn: Any, stack: str) -> str:
    """The first resource failure CloudFormation recorded, for a one-line error."""
    events = cfn.describe_stack_events(StackName=stack).get("StackEvents", [])
    for event in reversed(events):
        if str(event.get("ResourceStatus", "")).endswith("FAILED"):
            return f"{event.get('LogicalResourceId')}: {event.get('ResourceStatusReason', '')}"
    return "see the stack's events in the CloudFormation console"


def _wait(
    cfn: Any, stack: str, poll: float, timeout: float, progress: Callable[[str], None]
) -> dict[str, Any] | None:
    """Poll until the stack leaves *_IN_PROGRESS; None once it is gone."""
    deadline = time.monotonic() + timeout
    last = ""
    while True:
        current = _stack(cfn, stack)
        if current is None:
            return None
        state = str(current["StackStatus"])
        if state != last:
            progress(f"{stack}: {state}")
            last = state
        if not state.endswith("IN_PROGRESS"):
            return current
        if time.monotonic() > deadline:
            raise SmmpiError(f"stack {stack} still {state} after {timeout:.0f} s")
        time.sleep(poll)


def deploy(
    cfn: Any,
    stack: str = DEFAULT_STACK,
    *,
    vpc_id: str | None = None,
    retention_days: int | None = None,
    image_account: str | None = None,
    poll: float = 5.0,
    timeout: float = 1800.0,
    progress: Callable[[str], None] = lambda _msg: None,
) -> dict[str, str]:
    """Create the stack, or update it in place, and return its outputs."""
    check_inputs(stack, vpc_id, None, retention_days)
    params = {
        "VpcId": vpc_id or "",
        "JobDataRetentionDays": retention_days,
        "FrameworkImageAccount": image_account,
    }
    parameters = [
        {"ParameterKey": k, "ParameterValue": str(v)} for k, v in params.items() if v is not None
    ]
    request: dict[str, Any] = {
        "StackName": stack,
        "TemplateBody": template_path().read_text(encoding="utf-8"),
        "Parameters": parameters,
        "Capabilities": ["CAPABILITY_IAM"],
        "Tags": [{"Key": SMMPI_TAG_KEY, "Value": SMMPI_TAG_VALUE}],
    }
    from botocore.exceptions import ClientError

    with aws_errors():
        existing = _stack(cfn, stack)
        if existing is not None and existing["StackStatus"] == "ROLLBACK_COMPLETE":
            raise SmmpiError(
                f"stack {stack} failed to create earlier; delete it first "
                f"(smmpi infra delete --stack-name {stack})"
            )
        if existing is None:
            progress(f"{stack}: creating")
            cfn.create_stack(**request, OnFailure="ROLLBACK")
        else:
            progress(f"{stack}: updating")
            try:
                cfn.update_stack(**request)
            except ClientError as err:
                if "No updates are to be performed" not in str(err):
                    raise
                progress(f"{stack}: already up to date")
        final = _wait(cfn, stack, poll, timeout, progress)
        if final is None:
            raise SmmpiError(f"stack {stack} disappeared while deploying")
        if any(mark in final["StackStatus"] for mark in _FAILED):
            raise SmmpiError(f"stack {stack} {final['StackStatus']}: {_failure(cfn, stack)}")
        return _outputs(final)


def save_outputs(
    outputs: dict[str, str], *, region: str, stack: str, subnets: list[str] | None = None
) -> Path:
    """Write the stack's outputs into smmpi's config; keys absent from the stack are cleared."""
    group = outputs.get("SecurityGroupId")
    saved = config.save(
        {
            "role": outputs["RoleArn"],
            "bucket": outputs["BucketName"],
            "region": region,
            "stack": stack,
            "security_group_ids": [group] if group else None,
            "subnets": list(subnets) if group and subnets else None,
        }
    )
    _private(saved)
    return saved


def _private(saved: Path) -> None:
    """The config file 0600, and its folder 0700 when it is smmpi's own (``.../smmpi``)."""
    if not saved.is_symlink():
        saved.chmod(0o600)
    if saved.parent.name == "smmpi":
        tighten_dir(saved.parent)


def show(cfn: Any, stack: str = DEFAULT_STACK) -> tuple[str, dict[str, str]]:
    """The stack's state and outputs; a missing stack is an error that says how to make it."""
    with aws_errors():
        current = _stack(cfn, stack)
    if current is None:
        raise SmmpiError(
            f"no stack {stack} in {cfn.meta.region_name}; create it with `smmpi infra deploy`"
        )
    return str(current["StackStatus"]), _outputs(current)


def delete(
    cfn: Any,
    stack: str = DEFAULT_STACK,
    *,
    poll: float = 5.0,
    timeout: float = 1800.0,
    progress: Callable[[str], None] = lambda _msg: None,
) -> list[str]:
    """Delete the stack and forget its outputs; returns the buckets left behind (Retain).

    The job bucket comes first, then its access-log bucket.
    """
    with aws_errors():
        current = _stack(cfn, stack)
        if current is None:
            raise SmmpiError(f"no stack {stack} in {cfn.meta.region_name}; nothing to delete")
        outputs = _outputs(current)
        kept = [outputs[k] for k in ("BucketName", "AccessLogBucketName") if outputs.get(k)]
        cfn.delete_stack(StackName=stack)
        final = _wait(cfn, stack, poll, timeout, progress)
        if final is not None and final["StackStatus"] != "DELETE_COMPLETE":
            raise SmmpiError(f"stack {stack} {final['StackStatus']}: {_failure(cfn, stack)}")
    saved = config.load()
    if saved.get("stack") == stack:
        config.save({key: None for key in CONFIG_KEYS if key != "region"})
    return kept
