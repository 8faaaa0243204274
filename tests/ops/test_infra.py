"""infra/smmpi.yaml: cfn-lint clean, least privilege as written, and deployable with the CLI.

Deployment runs the real ``smmpi infra`` commands against a moto server; the
saved config is what ``submit`` reads, so it is checked key by key.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from smmpi import config
from smmpi.ops import infra
from tests.helpers import BIN, ROOT, MotoServer, smmpi

pytestmark = pytest.mark.aws

TEMPLATE = ROOT / "infra" / "smmpi.yaml"
SECRET = "testing-secret-do-not-print"


def load_template(path: Path = TEMPLATE) -> dict[str, Any]:
    from cfnlint.decode import cfn_yaml

    data: dict[str, Any] = json.loads(json.dumps(cfn_yaml.load(str(path))))
    return data


def cfn_lint(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN / "cfn-lint"), "--include-checks", "I", "--", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
    )


# ---------------------------------------------------------------- the template


def test_template_passes_cfn_lint_with_no_findings() -> None:
    done = cfn_lint(TEMPLATE)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


def test_cfn_lint_does_find_a_broken_template(tmp_path: Path) -> None:
    """The check above is real: the same run flags a security group without its description."""
    broken = tmp_path / "broken.yaml"
    broken.write_text(
        TEMPLATE.read_text().replace(
            "      GroupDescription: smmpi jobs - traffic only between the instances of a job\n", ""
        )
    )
    done = cfn_lint(broken)
    assert done.returncode != 0
    assert "GroupDescription" in done.stdout


def test_the_packaged_template_is_the_one_deployed() -> None:
    assert infra.template_path() == TEMPLATE.resolve()


def _statements(resource: dict[str, Any]) -> list[dict[str, Any]]:
    props = resource["Properties"]
    docs = [p["PolicyDocument"] for p in props.get("Policies", [])]
    if "PolicyDocument" in props:
        docs.append(props["PolicyDocument"])
    return [s for d in docs for s in d["Statement"]]


def test_role_trusts_sagemaker_with_least_privilege() -> None:
    resources = load_template()["Resources"]
    role = resources["ExecutionRole"]
    trust = role["Properties"]["AssumeRolePolicyDocument"]["Statement"]
    assert [s["Principal"] for s in trust] == [{"Service": "sagemaker.amazonaws.com"}]
    assert trust[0]["Condition"] == {
        "StringEquals": {"aws:SourceAccount": {"Ref": "AWS::AccountId"}}
    }
    assert "ManagedPolicyArns" not in role["Properties"]
    allowed = _statements(role) + _statements(resources["VpcAccessPolicy"])
    for statement in allowed:
        actions = (
            statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
        )
        assert statement["Effect"] == "Allow"
        assert all(not a.endswith("*") for a in actions), statement
        if statement["Resource"] == "*":
            # only actions that cannot be scoped to a resource may use "*"
            assert all(
                a.split(":")[1].startswith(
                    ("Describe", "Create", "Delete", "GetAuthorizationToken", "PutMetricData")
                )
                for a in actions
            ), statement
    by_sid = {s["Sid"]: s for s in allowed}
    assert by_sid["ReadWriteJobData"]["Resource"] == {"Fn::Sub": "${JobBucket.Arn}/*"}
    assert by_sid["ListJobBucket"]["Resource"] == {"Fn::GetAtt": ["JobBucket", "Arn"]}
    assert by_sid["JobMetrics"]["Condition"] == {
        "StringLike": {"cloudwatch:namespace": "/aws/sagemaker/*"}
    }
    assert all("/aws/sagemaker/TrainingJobs" in r["Fn::Sub"] for r in by_sid["JobLogs"]["Resource"])
    assert (
        "${FrameworkImageAccount}:repository/*"
        in by_sid["PullFrameworkImages"]["Resource"]["Fn::Sub"]
    )
    assert resources["VpcAccessPolicy"]["Condition"] == "HasVpc"


def test_bucket_is_encrypted_private_tls_only_and_expires_old_data() -> None:
    resources = load_template()["Resources"]
    bucket = resources["JobBucket"]["Properties"]
    sse = bucket["BucketEncryption"]["ServerSideEncryptionConfiguration"][0]
    assert sse["ServerSideEncryptionByDefault"]["SSEAlgorithm"] == "AES256"
    assert set(bucket["PublicAccessBlockConfiguration"].values()) == {True}
    assert len(bucket["PublicAccessBlockConfiguration"]) == 4
    rule = bucket["LifecycleConfiguration"]["Rules"][0]
    assert rule["Status"] == "Enabled"
    assert rule["ExpirationInDays"] == {"Ref": "JobDataRetentionDays"}
    (deny,) = resources["JobBucketPolicy"]["Properties"]["PolicyDocument"]["Statement"]
    assert deny["Effect"] == "Deny"
    assert deny["Action"] == "s3:*"
    assert deny["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
    assert resources["JobBucket"]["DeletionPolicy"] == "Retain"


def test_bucket_is_versioned_and_logs_access_to_a_log_bucket() -> None:
    """checkov's CKV_AWS_21 and CKV_AWS_18, fixed in the template (`make lint` runs checkov)."""
    resources = load_template()["Resources"]
    bucket = resources["JobBucket"]
    props = bucket["Properties"]
    assert props["VersioningConfiguration"] == {"Status": "Enabled"}
    rule = props["LifecycleConfiguration"]["Rules"][0]
    assert rule["NoncurrentVersionExpiration"] == {
        "NoncurrentDays": {"Ref": "DeletedDataRetentionDays"}
    }
    assert props["LoggingConfiguration"]["DestinationBucketName"] == {"Ref": "AccessLogBucket"}
    assert bucket["DependsOn"] == "AccessLogBucketPolicy"
    logs = resources["AccessLogBucket"]
    assert logs["DeletionPolicy"] == "Retain"
    assert logs["Properties"]["VersioningConfiguration"] == {"Status": "Enabled"}
    (skip,) = logs["Metadata"]["checkov"]["skip"]
    assert skip["id"] == "CKV_AWS_18" and "access-log bucket" in skip["comment"]
    allow, deny = resources["AccessLogBucketPolicy"]["Properties"]["PolicyDocument"]["Statement"]
    assert allow["Principal"] == {"Service": "logging.s3.amazonaws.com"}
    assert allow["Action"] == "s3:PutObject"
    assert allow["Condition"] == {"StringEquals": {"aws:SourceAccount": {"Ref": "AWS::AccountId"}}}
    assert deny["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}


def test_security_group_admits_only_its_own_members() -> None:
    template = load_template()
    resources = template["Resources"]
    assert template["Conditions"]["HasVpc"] == {"Fn::Not": [{"Fn::Equals": [{"Ref": "VpcId"}, ""]}]}
    group = resources["JobSecurityGroup"]
    assert group["Condition"] == "HasVpc"
    assert "SecurityGroupIngress" not in group["Properties"]
    ingress = [r for r in resources.values() if r["Type"] == "AWS::EC2::SecurityGroupIngress"]
    assert len(ingress) == 1
    props = ingress[0]["Properties"]
    assert props["SourceSecurityGroupId"] == {"Ref": "JobSecurityGroup"}
    assert not {"CidrIp", "CidrIpv6", "SourcePrefixListId"} & set(props)


# ---------------------------------------------------------------- deploy, show, delete


def _env(env: dict[str, str], moto: MotoServer) -> dict[str, str]:
    return {**env, **moto.aws_env()}


def _run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    done = smmpi(args, env)
    assert SECRET not in done.stdout + done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    return done


def test_deploy_creates_role_and_bucket_and_saves_them(
    moto_server: MotoServer, env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    done = _run(["infra", "deploy"], _env(env, moto_server))
    assert done.returncode == 0, done.stderr
    saved = json.loads(Path(env["SMMPI_CONFIG"]).read_text())
    assert set(saved) == {"role", "bucket", "region", "stack"}
    assert saved["region"] == "us-west-2"
    assert saved["stack"] == "smmpi"
    role_name = saved["role"].rsplit("/", 1)[1]
    iam = moto_server.boto3_client("iam")
    role = iam.get_role(RoleName=role_name)["Role"]
    assert role["Arn"] == saved["role"]
    assert role["AssumeRolePolicyDocument"]["Statement"][0]["Principal"] == {
        "Service": "sagemaker.amazonaws.com"
    }
    s3 = moto_server.boto3_client("s3")
    s3.head_bucket(Bucket=saved["bucket"])
    rules = s3.get_bucket_encryption(Bucket=saved["bucket"])["ServerSideEncryptionConfiguration"][
        "Rules"
    ]
    assert rules[0]["ApplyServerSideEncryptionByDefault"]["SSEAlgorithm"] == "AES256"
    # moto's CloudFormation ignores versioning and logging settings; the template test checks them
    (stack,) = moto_server.boto3_client("cloudformation").describe_stacks()["Stacks"]
    log_bucket = {o["OutputKey"]: o["OutputValue"] for o in stack["Outputs"]}["AccessLogBucketName"]
    assert log_bucket != saved["bucket"]
    s3.head_bucket(Bucket=log_bucket)
    assert done.stdout.splitlines() == [
        f"AccessLogBucketName: {log_bucket}",
        f"BucketName: {saved['bucket']}",
        f"RoleArn: {saved['role']}",
        f"saved role and bucket to {env['SMMPI_CONFIG']}",
    ]
    # what submit will read, by the documented precedence
    monkeypatch.setenv("SMMPI_CONFIG", env["SMMPI_CONFIG"])
    monkeypatch.delenv("SMMPI_ROLE", raising=False)
    monkeypatch.delenv("SMMPI_BUCKET", raising=False)
    assert config.setting("role") == saved["role"]
    assert config.setting("bucket") == saved["bucket"]

    again = _run(["infra", "deploy"], _env(env, moto_server))
    assert again.returncode == 0, again.stderr
    assert json.loads(Path(env["SMMPI_CONFIG"]).read_text()) == saved
    assert (
        moto_server.boto3_client("cloudformation").describe_stacks()["Stacks"][0]["StackName"]
        == "smmpi"
    )


def test_deploy_in_a_vpc_saves_the_security_group(
    moto_server: MotoServer, env: dict[str, str]
) -> None:
    ec2 = moto_server.boto3_client("ec2")
    vpc = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
    subnet = ec2.create_subnet(VpcId=vpc, CidrBlock="10.0.1.0/24")["Subnet"]["SubnetId"]
    done = _run(
        [
            "infra",
            "deploy",
            "--stack-name",
            "smmpi-vpc",
            "--vpc-id",
            vpc,
            "--subnet",
            subnet,
            "--retention-days",
            "30",
        ],
        _env(env, moto_server),
    )
    assert done.returncode == 0, done.stderr
    saved = json.loads(Path(env["SMMPI_CONFIG"]).read_text())
    (group_id,) = saved["security_group_ids"]
    assert saved["subnets"] == [subnet]
    (group,) = ec2.describe_security_groups(GroupIds=[group_id])["SecurityGroups"]
    assert group["VpcId"] == vpc
    assert f"SecurityGroupId: {group_id}" in done.stdout.splitlines()
    (stack,) = moto_server.boto3_client("cloudformation").describe_stacks()["Stacks"]
    params = {p["ParameterKey"]: p["ParameterValue"] for p in stack["Parameters"]}
    assert params["VpcId"] == vpc
    assert params["JobDataRetentionDays"] == "30"


def test_show_and_delete(moto_server: MotoServer, env: dict[str, str]) -> None:
    aws = _env(env, moto_server)
    assert _run(["infra", "deploy"], aws).returncode == 0
    saved = json.loads(Path(env["SMMPI_CONFIG"]).read_text())
    shown = _run(["infra", "show"], aws)
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert lines[0] == "stack: smmpi (CREATE_COMPLETE) in us-west-2"
    assert f"RoleArn: {saved['role']}" in lines
    assert lines[-1] == (
        f"config: {env['SMMPI_CONFIG']}: role={saved['role']} bucket={saved['bucket']}"
    )

    deleted = _run(["infra", "delete", "--yes"], aws)
    assert deleted.returncode == 0, deleted.stderr
    assert deleted.stdout.splitlines()[0] == "deleted stack smmpi"
    assert f"bucket {saved['bucket']} was kept" in deleted.stdout
    assert "with its access logs" in deleted.stdout
    assert json.loads(Path(env["SMMPI_CONFIG"]).read_text()) == {"region": "us-west-2"}
    assert moto_server.boto3_client("cloudformation").describe_stacks()["Stacks"] == [] or all(
        s["StackStatus"] == "DELETE_COMPLETE"
        for s in moto_server.boto3_client("cloudformation").describe_stacks()["Stacks"]
    )

    gone = _run(["infra", "show"], aws)
    assert gone.returncode == 1
    assert gone.stderr.strip().splitlines() == [
        "smmpi: no stack smmpi in us-west-2; create it with `smmpi infra deploy`"
    ]


def test_delete_asks_first(moto_server: MotoServer, env: dict[str, str]) -> None:
    aws = _env(env, moto_server)
    assert _run(["infra", "deploy"], aws).returncode == 0
    done = subprocess.run(
        [str(BIN / "smmpi"), "infra", "delete"],
        env=aws,
        input="n\n",
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    assert done.stderr == "smmpi: stack smmpi not deleted\n"
    stacks = moto_server.boto3_client("cloudformation").describe_stacks()["Stacks"]
    assert [s["StackStatus"] for s in stacks] == ["CREATE_COMPLETE"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--vpc-id", "vpc-nothex!"],
            "smmpi: invalid vpc id: 'vpc-nothex!'; allowed: vpc- followed by 8 or 17 hex digits",
        ),
        (
            ["--subnet", "subnet-0123abcd"],
            "smmpi: invalid subnet: 'subnet-0123abcd'; allowed: only "
            "with --vpc-id (the subnets must be in it)",
        ),
        (
            ["--stack-name", "1smmpi"],
            "smmpi: invalid stack name: '1smmpi'; allowed: a letter, then "
            "up to 127 letters, digits, hyphens",
        ),
        (["--retention-days", "0"], "smmpi: invalid retention days: 0; allowed: an integer >= 1"),
    ],
)
def test_bad_deploy_input_creates_nothing(
    args: list[str], message: str, moto_server: MotoServer, env: dict[str, str]
) -> None:
    done = _run(["infra", "deploy", *args], _env(env, moto_server))
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [message]
    assert moto_server.boto3_client("cloudformation").describe_stacks()["Stacks"] == []
    assert not Path(env["SMMPI_CONFIG"]).exists()
