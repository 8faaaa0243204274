"""What clients create in IAM, CloudFormation and CloudWatch Logs survives a restart of serve."""

from __future__ import annotations

import json
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError

from tests.helpers import base_env
from tests.serve.serving import ServeProcess

pytestmark = pytest.mark.aws

TRUST = {
    "Version": "2012-10-17",
    "Statement": [
        {
            "Effect": "Allow",
            "Principal": {"Service": "sagemaker.amazonaws.com"},
            "Action": "sts:AssumeRole",
        }
    ],
}
POLICY = {
    "Version": "2012-10-17",
    "Statement": [{"Effect": "Allow", "Action": "s3:GetObject", "Resource": "*"}],
}
TEMPLATE = {
    "Resources": {
        "Logs": {"Type": "AWS::Logs::LogGroup", "Properties": {"LogGroupName": "from-a-stack"}},
        "Role": {
            "Type": "AWS::IAM::Role",
            "Properties": {"RoleName": "stack-role", "AssumeRolePolicyDocument": TRUST},
        },
    },
    "Outputs": {"Group": {"Value": {"Ref": "Logs"}}},
}
ESCAPE = "../../../../escape"


@pytest.fixture
def started(tmp_path: Path) -> Iterator[list[ServeProcess]]:
    servers: list[ServeProcess] = []
    yield servers
    for server in servers:
        server.stop()


def _start(tmp_path: Path, servers: list[ServeProcess]) -> ServeProcess:
    servers.append(ServeProcess(tmp_path / "state", base_env(tmp_path)))
    return servers[-1]


def _create(serve: ServeProcess) -> None:
    iam, cfn, logs = serve.client("iam"), serve.client("cloudformation"), serve.client("logs")
    iam.create_role(RoleName="kept-role", AssumeRolePolicyDocument=json.dumps(TRUST))
    iam.put_role_policy(RoleName="kept-role", PolicyName="read", PolicyDocument=json.dumps(POLICY))
    iam.create_role(RoleName="gone-role", AssumeRolePolicyDocument=json.dumps(TRUST))
    iam.delete_role(RoleName="gone-role")
    cfn.create_stack(StackName="kept-stack", TemplateBody=json.dumps(TEMPLATE))
    logs.create_log_group(logGroupName="client-group")
    logs.create_log_stream(logGroupName="client-group", logStreamName="worker/1")
    now = int(__import__("time").time() * 1000)
    logs.put_log_events(
        logGroupName="client-group",
        logStreamName="worker/1",
        logEvents=[{"timestamp": now + i, "message": f"line {i}"} for i in range(3)],
    )
    logs.create_log_group(logGroupName=ESCAPE)
    logs.create_log_stream(logGroupName=ESCAPE, logStreamName=ESCAPE)


def _read(serve: ServeProcess) -> dict[str, Any]:
    iam, cfn, logs = serve.client("iam"), serve.client("cloudformation"), serve.client("logs")
    role = iam.get_role(RoleName="kept-role")["Role"]
    stack = cfn.describe_stacks(StackName="kept-stack")["Stacks"][0]
    events = logs.get_log_events(
        logGroupName="client-group", logStreamName="worker/1", startFromHead=True
    )["events"]
    groups = logs.describe_log_groups()["logGroups"]
    return {
        "role": (role["RoleName"], role["Arn"], role["AssumeRolePolicyDocument"]),
        "policy": iam.get_role_policy(RoleName="kept-role", PolicyName="read")["PolicyDocument"],
        "roles": sorted(r["RoleName"] for r in iam.list_roles()["Roles"]),
        "stack": (stack["StackName"], stack["StackStatus"], stack.get("Outputs")),
        "resources": sorted(
            (r["LogicalResourceId"], r["PhysicalResourceId"], r["ResourceStatus"])
            for r in cfn.list_stack_resources(StackName="kept-stack")["StackResourceSummaries"]
        ),
        "events": [(e["timestamp"], e["message"]) for e in events],
        "groups": sorted(g["logGroupName"] for g in groups),
        "streams": [
            s["logStreamName"] for s in logs.describe_log_streams(logGroupName=ESCAPE)["logStreams"]
        ],
    }


def test_roles_stacks_and_client_logs_survive_a_restart(
    tmp_path: Path, started: list[ServeProcess]
) -> None:
    serve = _start(tmp_path, started)
    _create(serve)
    before = _read(serve)
    assert serve.stop() == 0
    again = _start(tmp_path, started)
    after = _read(again)
    assert after == before
    assert "gone-role" not in after["roles"]
    assert {"kept-role", "stack-role"} <= set(after["roles"])
    assert after["stack"] == ("kept-stack", "CREATE_COMPLETE", before["stack"][2])
    with pytest.raises(ClientError):  # the journal replays each write once
        again.client("iam").create_role(
            RoleName="kept-role", AssumeRolePolicyDocument=json.dumps(TRUST)
        )
    again.client("cloudformation").delete_stack(StackName="kept-stack")
    assert again.stop() == 0
    third = _start(tmp_path, started)
    roles = [r["RoleName"] for r in third.client("iam").list_roles()["Roles"]]
    assert "stack-role" not in roles and "kept-role" in roles  # the stack's delete was kept
    assert third.stop() == 0
    state = tmp_path / "state"
    for path in state.rglob("*"):
        mode = stat.S_IMODE(path.lstat().st_mode)
        assert mode == (0o700 if path.is_dir() else 0o600), (path, oct(mode))
    assert not list(tmp_path.rglob("escape*")) and not Path("/escape").exists()
