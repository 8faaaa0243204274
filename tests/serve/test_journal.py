"""The IAM/CloudFormation/Logs journal across restarts: ids stay, what was deleted is dropped."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any
from urllib.parse import unquote_plus

import boto3
import pytest

from smmpi.serve import Server
from smmpi.serve.journal import Journal

pytestmark = pytest.mark.aws

REGION = "us-west-2"
TRUST = json.dumps({
    "Version": "2012-10-17",
    "Statement": [{"Effect": "Allow", "Principal": {"Service": "sagemaker.amazonaws.com"},
                   "Action": "sts:AssumeRole"}],
})  # fmt: skip
POLICY = json.dumps({
    "Version": "2012-10-17",
    "Statement": [{"Effect": "Allow", "Action": "s3:GetObject", "Resource": "*"}],
})  # fmt: skip


def _template(role: str, group: str) -> str:
    return json.dumps({
        "Resources": {
            "Logs": {"Type": "AWS::Logs::LogGroup", "Properties": {"LogGroupName": group}},
            "Role": {"Type": "AWS::IAM::Role", "Properties": {
                "RoleName": role, "AssumeRolePolicyDocument": json.loads(TRUST)}},
        },
    })  # fmt: skip


def _clients(server: Server) -> dict[str, Any]:
    session = boto3.Session(
        aws_access_key_id=server.keys.access_key,
        aws_secret_access_key=server.keys.secret_key,
        region_name=REGION,
    )
    return {
        name: session.client(name, endpoint_url=server.url)  # type: ignore[call-overload]
        for name in ("iam", "cloudformation", "logs")
    }


def _make(server: Server) -> None:
    iam, cfn, logs = (_clients(server)[n] for n in ("iam", "cloudformation", "logs"))
    for role in ("kept-role", "gone-role"):
        iam.create_role(RoleName=role, AssumeRolePolicyDocument=TRUST)
        iam.put_role_policy(RoleName=role, PolicyName="read", PolicyDocument=POLICY)
    iam.delete_role_policy(RoleName="gone-role", PolicyName="read")
    iam.delete_role(RoleName="gone-role")
    iam.create_user(UserName="gone-user")
    iam.delete_user(UserName="gone-user")
    cfn.create_stack(StackName="kept-stack", TemplateBody=_template("kept-stack-role", "kept-lg"))
    cfn.create_stack(StackName="gone-stack", TemplateBody=_template("gone-stack-role", "gone-lg"))
    gone_id = cfn.describe_stacks(StackName="gone-stack")["Stacks"][0]["StackId"]
    cfn.delete_stack(StackName=gone_id)  # by its ARN
    now = int(time.time() * 1000)
    for group in ("kept-group", "gone-group"):
        logs.create_log_group(logGroupName=group)
        for stream in ("kept-stream", "gone-stream"):
            logs.create_log_stream(logGroupName=group, logStreamName=stream)
            event = {"timestamp": now, "message": f"{group}/{stream}"}
            logs.put_log_events(logGroupName=group, logStreamName=stream, logEvents=[event])
    logs.delete_log_stream(logGroupName="kept-group", logStreamName="gone-stream")
    logs.delete_log_group(logGroupName="gone-group")


def _kept(state: Path) -> list[str]:
    """Each kept request, as its parameters read (bodies are kept base64-encoded)."""
    return [
        unquote_plus(call.query + " " + call.body.decode()) for call in Journal(state).entries()
    ]


def _state(server: Server) -> dict[str, Any]:
    iam, cfn, logs = (_clients(server)[n] for n in ("iam", "cloudformation", "logs"))
    roles = {r["RoleName"]: r["RoleId"] for r in iam.list_roles()["Roles"]}
    stacks = cfn.describe_stacks()["Stacks"]
    groups = sorted(g["logGroupName"] for g in logs.describe_log_groups()["logGroups"])
    streams = logs.describe_log_streams(logGroupName="kept-group")["logStreams"]
    events = logs.get_log_events(
        logGroupName="kept-group", logStreamName="kept-stream", startFromHead=True
    )["events"]
    return {
        "roles": roles,
        "policies": iam.list_role_policies(RoleName="kept-role")["PolicyNames"],
        "users": [u["UserName"] for u in iam.list_users()["Users"]],
        "stacks": sorted((s["StackName"], s["StackId"], s["StackStatus"]) for s in stacks),
        "groups": groups,
        "streams": [s["logStreamName"] for s in streams],
        "events": [(e["timestamp"], e["message"]) for e in events],
    }


def test_a_restart_keeps_ids_and_drops_what_deletes_undid(tmp_path: Path) -> None:
    state = tmp_path / "state"
    with Server(state=state) as server:
        _make(server)
        before = _state(server)
    assert set(before["roles"]) == {"kept-role", "kept-stack-role"}
    assert [s[0] for s in before["stacks"]] == ["kept-stack"]
    assert before["groups"] == ["kept-group", "kept-lg"]
    written = "\n".join(_kept(state))
    assert "gone-role" in written and "gone-group" in written and "gone-stack" in written
    with Server(state=state) as again:
        after = _state(again)
    assert after == before  # the ids too: a role's RoleId, a stack's StackId
    compacted = "\n".join(_kept(state))
    assert len(_kept(state)) < len(written.splitlines())
    for gone in ("gone-role", "gone-user", "gone-stack", "gone-group", "gone-stream"):
        assert gone not in compacted, gone
    for kept in ("kept-role", "kept-stack", "kept-group", "kept-stream"):
        assert kept in compacted, kept
    with Server(state=state) as third:
        assert _state(third) == before
    assert "\n".join(_kept(state)) == compacted  # nothing more to drop
