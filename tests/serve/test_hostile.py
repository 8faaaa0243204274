"""At least 100 malformed, oversized, wrongly signed or out-of-order requests.

Each gets SageMaker's error shape (JSON ``__type`` and ``message``, or S3's and
the query protocols' XML), the server keeps answering, and nothing is started
or written: no job, no run folder, no object.
"""

# ruff: noqa: E501  (the cases are a table, one request a line)
from __future__ import annotations

import json
import socket
from typing import Any

import pytest

from tests.serve.hostile import Raw, params, send
from tests.serve.serving import ServeProcess, dry_run_request, processes_under

pytestmark = pytest.mark.aws

GOOD_NAME = "hostile-never-created"


def _request(**changes: Any) -> bytes:
    request = json.loads(_TEMPLATE[0])
    for key, value in changes.items():
        if value is _DROP:
            request.pop(key, None)
        else:
            request[key] = value
    return json.dumps(request).encode()


_DROP = object()
_TEMPLATE: list[str] = []


def _set_header(name: str, value: str | None) -> Any:
    def change(headers: dict[str, str]) -> None:
        if value is None:
            headers.pop(name, None)
        else:
            headers[name] = value

    return change


def _auth(change: Any) -> Any:
    def apply(headers: dict[str, str]) -> None:
        headers["Authorization"] = change(headers["Authorization"])

    return apply


BAD_NAMES = [
    "", "-lead", "trail-", "under_score", "a" * 64, "dot.ted", "sp ace", "../../etc",
    "a/b", "ä", "a\u0000b", "%2e%2e", "semi;colon", "new\nline", "star*",
]  # fmt: skip


def _cases() -> list[tuple[str, Raw, int, str]]:
    """(id, request, HTTP status, error code)."""
    c: list[tuple[str, Raw, int, str]] = []
    auth = [
        ("unsigned", Raw(sign=False), 403, "MissingAuthenticationTokenException"),
        ("wrong-key", Raw(keys=("AKIAWRONGWRONGWRONG1", "x" * 40)), 400, "UnrecognizedClientException"),
        ("wrong-secret", Raw(keys=("OWN", "y" * 40)), 403, "InvalidSignatureException"),
        ("garbled-auth", Raw(after=_set_header("Authorization", "AWS4 nonsense")), 403,
         "MissingAuthenticationTokenException"),
        ("no-date", Raw(after=_set_header("X-Amz-Date", None)), 403, "MissingAuthenticationTokenException"),
        ("old-date", Raw(after=_set_header("X-Amz-Date", "20200101T000000Z")), 403,
         "InvalidSignatureException"),
        ("future-date", Raw(after=_set_header("X-Amz-Date", "20990101T000000Z")), 403,
         "InvalidSignatureException"),
        ("tampered-target", Raw(after=_set_header("X-Amz-Target", "SageMaker.StopTrainingJob")),
         403, "InvalidSignatureException"),
        ("tampered-body", Raw(body=params(TrainingJobName="a"), tamper_body=params(TrainingJobName="b")),
         403, "InvalidSignatureException"),
        ("sig-flipped", Raw(after=_auth(lambda a: a[:-1] + ("0" if a[-1] != "0" else "1"))), 403,
         "InvalidSignatureException"),
        ("no-host-signed", Raw(after=_auth(lambda a: a.replace("SignedHeaders=", "SignedHeaders=x-amz-date;").replace("host;", ""))),
         403, "InvalidSignatureException"),
        ("scope-other-region", Raw(after=_auth(lambda a: a.replace("/us-west-2/", "/eu-west-1/"))), 403,
         "InvalidSignatureException"),
        ("scope-other-date", Raw(after=_auth(lambda a: a.replace("/2", "/1", 1))), 403,
         "InvalidSignatureException"),
        ("s3-wrong-key", Raw(service="s3", target=None, method="GET", path="/", body=b"",
                              keys=("AKIAWRONGWRONGWRONG1", "x" * 40)), 403, "InvalidAccessKeyId"),
        ("s3-wrong-secret", Raw(service="s3", target=None, method="PUT", path="/hostile-bucket", body=b"",
                                 keys=("OWN", "z" * 40)), 403, "SignatureDoesNotMatch"),
        ("s3-put-tampered", Raw(service="s3", target=None, method="PUT", path="/hostile-bucket/k",
                                 body=b"one", tamper_body=b"two"), 403, "SignatureDoesNotMatch"),
        ("sts-wrong-key", Raw(service="sts", target=None, body=b"Action=GetCallerIdentity&Version=2011-06-15",
                              keys=("AKIAWRONGWRONGWRONG1", "x" * 40),
                              extra={"Content-Type": "application/x-www-form-urlencoded"}), 403,
         "InvalidClientTokenId"),
        ("logs-wrong-key", Raw(service="logs", target="Logs_20140328.DescribeLogGroups",
                               keys=("AKIAWRONGWRONGWRONG1", "x" * 40)), 400, "UnrecognizedClientException"),
        ("other-service", Raw(service="ec2", target=None), 400, "UnknownOperationException"),
        ("moto-api", Raw(service="s3", target=None, method="POST", path="/moto-api/reset", body=b""), 403,
         "AccessDenied"),
    ]  # fmt: skip
    c += auth
    create = "SageMaker.CreateTrainingJob"
    for name in BAD_NAMES:
        c.append((f"name-{name.encode().hex()[:12] or 'empty'}", Raw(target=create, body=_request(TrainingJobName=name)), 400, "ValidationException"))  # fmt: skip
    for field in ("TrainingJobName", "AlgorithmSpecification", "RoleArn", "OutputDataConfig",
                  "ResourceConfig", "InstanceTypeInside"):  # fmt: skip
        if field == "InstanceTypeInside":
            body = _request(ResourceConfig={"InstanceCount": 1, "VolumeSizeInGB": 30})
        else:
            body = _request(**{field: _DROP})
        c.append((f"missing-{field}", Raw(body=body), 400, "ValidationException"))
    bad_fields: list[tuple[str, dict[str, Any]]] = [
        ("count-0", {"ResourceConfig": {"InstanceCount": 0, "InstanceType": "ml.c5.xlarge", "VolumeSizeInGB": 30}}),
        ("count-neg", {"ResourceConfig": {"InstanceCount": -1, "InstanceType": "ml.c5.xlarge", "VolumeSizeInGB": 30}}),
        ("count-str", {"ResourceConfig": {"InstanceCount": "2", "InstanceType": "ml.c5.xlarge", "VolumeSizeInGB": 30}}),
        ("count-float", {"ResourceConfig": {"InstanceCount": 1.5, "InstanceType": "ml.c5.xlarge", "VolumeSizeInGB": 30}}),
        ("type-bad", {"ResourceConfig": {"InstanceCount": 1, "InstanceType": "c5.xlarge", "VolumeSizeInGB": 30}}),
        ("volume-0", {"ResourceConfig": {"InstanceCount": 1, "InstanceType": "ml.c5.xlarge", "VolumeSizeInGB": 0}}),
        ("runtime-0", {"StoppingCondition": {"MaxRuntimeInSeconds": 0}}),
        ("role-bad", {"RoleArn": "not-an-arn"}),
        ("role-long", {"RoleArn": "arn:aws:iam::123456789012:role/" + "r" * 2100}),
        ("output-http", {"OutputDataConfig": {"S3OutputPath": "http://example.com/x"}}),
        ("output-long", {"OutputDataConfig": {"S3OutputPath": "s3://b/" + "k" * 1100}}),
        ("mode-bad", {"AlgorithmSpecification": {"TrainingInputMode": "Teleport", "TrainingImage": "x"}}),
        ("hp-101", {"HyperParameters": {f"k{i}": "v" for i in range(101)}}),
        ("hp-value-long", {"HyperParameters": {"k": "v" * 2501}}),
        ("hp-key-long", {"HyperParameters": {"k" * 257: "v"}}),
        ("hp-not-str", {"HyperParameters": {"k": 3}}),
        ("tags-51", {"Tags": [{"Key": f"k{i}", "Value": "v"} for i in range(51)]}),
        ("tag-key-long", {"Tags": [{"Key": "k" * 129, "Value": "v"}]}),
        ("tag-no-key", {"Tags": [{"Value": "v"}]}),
        ("env-49", {"Environment": {f"E{i}": "v" * 600 for i in range(49)}}),
        ("env-key-bad", {"Environment": {"1BAD KEY": "v"}}),
        ("channels-21", {"InputDataConfig": [{"ChannelName": f"c{i}", "DataSource": {"S3DataSource": {"S3DataType": "S3Prefix", "S3Uri": "s3://b/p"}}} for i in range(21)]}),
        ("channel-name-bad", {"InputDataConfig": [{"ChannelName": "bad name", "DataSource": {"S3DataSource": {"S3DataType": "S3Prefix", "S3Uri": "s3://b/p"}}}]}),
        ("channel-dotdot", {"InputDataConfig": [{"ChannelName": "..", "DataSource": {"S3DataSource": {"S3DataType": "S3Prefix", "S3Uri": "s3://b/p"}}}]}),
        ("channel-uri-bad", {"InputDataConfig": [{"ChannelName": "c", "DataSource": {"S3DataSource": {"S3DataType": "S3Prefix", "S3Uri": "ftp://b/p"}}}]}),
        ("unknown-param", {"Teleport": True}),
        ("vpc-bad", {"VpcConfig": {"SecurityGroupIds": [], "Subnets": []}}),
        ("checkpoint-bad", {"CheckpointConfig": {"S3Uri": "file:///etc"}}),
        ("spot-not-bool", {"EnableManagedSpotTraining": "yes"}),
        ("channels-same-name", {"InputDataConfig": [{"ChannelName": "train", "DataSource": {"S3DataSource": {"S3DataType": "S3Prefix", "S3Uri": f"s3://b/p{i}"}}} for i in range(2)]}),
    ]  # fmt: skip
    for label, change in bad_fields:
        c.append((f"field-{label}", Raw(body=_request(**change)), 400, "ValidationException"))
    bodies: list[tuple[str, bytes, int, str]] = [
        ("not-json", b"{nope", 400, "SerializationException"),
        ("json-array", b"[1,2]", 400, "ValidationException"),
        ("json-string", b'"hello"', 400, "ValidationException"),
        ("json-null", b"null", 400, "ValidationException"),
        ("not-utf8", b"\xff\xfe{}", 400, "SerializationException"),
        ("deep", b"[" * 5000 + b"]" * 5000, 400, "SerializationException"),
        ("oversized", b"{" + b" " * (2 << 20) + b"}", 413, "RequestEntityTooLarge"),
    ]
    for label, body, status, code in bodies:
        c.append((f"body-{label}", Raw(body=body), status, code))
    ops: list[tuple[str, str, bytes]] = [
        ("describe-missing", "DescribeTrainingJob", params()),
        ("describe-unknown", "DescribeTrainingJob", params(TrainingJobName="no-such-job-here")),
        ("describe-bad-name", "DescribeTrainingJob", params(TrainingJobName="../../x")),
        ("describe-extra", "DescribeTrainingJob", params(TrainingJobName="a", Nope=1)),
        ("stop-unknown", "StopTrainingJob", params(TrainingJobName="no-such-job-here")),
        ("stop-missing", "StopTrainingJob", params()),
        ("list-max-0", "ListTrainingJobs", params(MaxResults=0)),
        ("list-max-101", "ListTrainingJobs", params(MaxResults=101)),
        ("list-sort-bad", "ListTrainingJobs", params(SortBy="Size")),
        ("list-order-bad", "ListTrainingJobs", params(SortOrder="Sideways")),
        ("list-status-bad", "ListTrainingJobs", params(StatusEquals="Dancing")),
        ("list-token-bad", "ListTrainingJobs", params(NextToken="garbage!")),
        ("list-token-neg", "ListTrainingJobs", params(NextToken="c21tcGk6LTE=")),
        ("list-time-bad", "ListTrainingJobs", params(CreationTimeAfter="yesterday-ish")),
        ("list-name-long", "ListTrainingJobs", params(NameContains="n" * 64)),
        ("tags-unknown-arn", "ListTags", params(ResourceArn="arn:aws:sagemaker:us-west-2:123456789012:training-job/nope")),
        ("tags-bad-arn", "ListTags", params(ResourceArn="nope")),
        ("addtags-unknown", "AddTags", params(ResourceArn="arn:aws:sagemaker:us-west-2:123456789012:training-job/nope", Tags=[{"Key": "a", "Value": "b"}])),
        ("addtags-none", "AddTags", params(ResourceArn="arn:aws:sagemaker:us-west-2:123456789012:training-job/nope")),
        ("deltags-unknown", "DeleteTags", params(ResourceArn="arn:aws:sagemaker:us-west-2:123456789012:training-job/nope", TagKeys=["a"])),
        ("deltags-empty", "DeleteTags", params(ResourceArn="arn:aws:sagemaker:us-west-2:123456789012:training-job/nope", TagKeys=[])),
    ]  # fmt: skip
    for label, op, body in ops:
        c.append(
            (f"op-{label}", Raw(target=f"SageMaker.{op}", body=body), 400, "ValidationException")
        )
    others = [
        ("target-unknown", Raw(target="SageMaker.DeleteEverything"), 400, "UnknownOperationException"),
        ("target-other", Raw(target="DynamoDB_20120810.ListTables"), 400, "UnknownOperationException"),
        ("target-missing", Raw(target=None), 400, "UnknownOperationException"),
        ("target-long", Raw(target="SageMaker." + "X" * 5000), 400, "UnknownOperationException"),
        ("get", Raw(method="GET", body=b""), 400, "UnknownOperationException"),
        ("put", Raw(method="PUT"), 400, "UnknownOperationException"),
        ("path", Raw(path="/admin"), 400, "UnknownOperationException"),
        ("create-model", Raw(target="SageMaker.CreateModel"), 400, "UnknownOperationException"),
        ("create-endpoint", Raw(target="SageMaker.CreateEndpoint"), 400, "UnknownOperationException"),
        ("delete-job", Raw(target="SageMaker.DeleteTrainingJob"), 400, "UnknownOperationException"),
    ]  # fmt: skip
    c += others
    c += _scope_cases()
    return c


_FORM = {"Content-Type": "application/x-www-form-urlencoded"}
_IDENTITY = b"Action=GetCallerIdentity&Version=2011-06-15"
_LIST = "SageMaker.ListTrainingJobs"


def _scope_cases() -> list[tuple[str, Raw, int, str]]:
    """Signed for another service or an unknown region, or with a body its signature does
    not cover: each refused in the shape of the operation's own protocol."""
    unsigned = {"X-Amz-Content-SHA256": "UNSIGNED-PAYLOAD"}
    return [
        ("scope-s3-for-sagemaker", Raw(service="s3", target=_LIST, shape="json"), 403, "InvalidSignatureException"),
        ("scope-iam-for-sagemaker", Raw(service="iam", target=_LIST, shape="json"), 403, "InvalidSignatureException"),
        ("scope-sts-for-sagemaker", Raw(service="sts", target=_LIST, shape="json"), 403, "InvalidSignatureException"),
        ("scope-ec2-for-sagemaker", Raw(service="ec2", target=_LIST, shape="json"), 403, "InvalidSignatureException"),
        ("scope-logs-for-sagemaker", Raw(service="logs", target=_LIST, shape="json"), 403, "InvalidSignatureException"),
        ("scope-sagemaker-for-logs", Raw(target="Logs_20140328.DescribeLogGroups"), 403, "InvalidSignatureException"),
        ("scope-logs-for-sts", Raw(service="logs", target=None, body=_IDENTITY, extra=_FORM, shape="xml"), 403,
         "SignatureDoesNotMatch"),
        ("scope-iam-for-sts", Raw(service="iam", target=None, body=_IDENTITY, extra=_FORM), 403, "SignatureDoesNotMatch"),
        ("scope-s3-for-sts", Raw(service="s3", target=None, body=_IDENTITY, extra=_FORM), 403, "SignatureDoesNotMatch"),
        ("scope-sts-by-host", Raw(service="sts", target=None, method="GET", path="/", body=b"",
                                  extra={"Host": "s3.us-west-2.amazonaws.com"}), 403, "SignatureDoesNotMatch"),
        ("region-unknown", Raw(target=_LIST, region="xx-fake-9"), 403, "InvalidSignatureException"),
        ("region-empty-ish", Raw(target=_LIST, region="us-west-99"), 403, "InvalidSignatureException"),
        ("region-unknown-s3", Raw(service="s3", target=None, method="GET", body=b"", region="xx-fake-9"), 403,
         "SignatureDoesNotMatch"),
        ("region-unknown-logs", Raw(service="logs", target="Logs_20140328.DescribeLogGroups", region="xx-fake-9"), 403,
         "InvalidSignatureException"),
        ("region-unknown-sts", Raw(service="sts", target=None, body=_IDENTITY, extra=_FORM, region="xx-fake-9"), 403,
         "SignatureDoesNotMatch"),
        ("payload-unsigned", Raw(target=_LIST, extra=unsigned), 403, "InvalidSignatureException"),
        ("payload-unsigned-replayed", Raw(target=_LIST, extra=unsigned, tamper_body=params(MaxResults=1)), 403,
         "InvalidSignatureException"),
        ("payload-unsigned-after", Raw(target=_LIST, after=_set_header("X-Amz-Content-SHA256", "UNSIGNED-PAYLOAD")),
         403, "InvalidSignatureException"),
        ("payload-streaming", Raw(target=_LIST, extra={"X-Amz-Content-SHA256": "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"}),
         403, "InvalidSignatureException"),
        ("payload-logs-unsigned", Raw(service="logs", target="Logs_20140328.DescribeLogGroups", extra=unsigned), 403,
         "InvalidSignatureException"),
        ("payload-sts-unsigned", Raw(service="sts", target=None, body=_IDENTITY, extra={**_FORM, **unsigned}), 403,
         "SignatureDoesNotMatch"),
        ("s3-key-1025", Raw(service="s3", target=None, method="PUT", path="/hostile-bucket/" + "k" * 1025, body=b"x"),
         400, "KeyTooLongError"),
    ]  # fmt: skip


def _template() -> None:
    if not _TEMPLATE:
        env = {"HOME": "/tmp"}
        _TEMPLATE.append(json.dumps(dry_run_request(env, GOOD_NAME, "hostile-bucket")))


_template()
CASES = _cases()


def test_the_suite_has_at_least_100_requests() -> None:
    assert len(CASES) >= 100, len(CASES)


def _state(serve: ServeProcess) -> tuple[list[str], list[str], list[str]]:
    jobs = sorted(p.name for p in (serve.state / "jobs").glob("*.json"))
    runs = sorted(p.name for p in (serve.state / "runs").iterdir())
    objects = sorted(p.name for p in (serve.state / "s3" / "objects").iterdir())
    return jobs, runs, objects


@pytest.mark.parametrize(("label", "raw", "status", "code"), CASES, ids=[c[0] for c in CASES])
def test_a_hostile_request_gets_an_error_and_changes_nothing(
    serve: ServeProcess, label: str, raw: Raw, status: int, code: str
) -> None:
    own = (serve.exports["AWS_ACCESS_KEY_ID"], serve.exports["AWS_SECRET_ACCESS_KEY"])
    if raw.keys and raw.keys[0] == "OWN":
        raw.keys = (own[0], raw.keys[1])
    before = _state(serve)
    got, headers, body = send(serve.url, own, raw)
    assert got == status, body[:500]
    if raw.shape == "json" or (raw.shape is None and raw.service in ("sagemaker", "logs", "ec2")):
        answer = json.loads(body)
        assert answer["__type"] == code, answer
        assert answer["message"]
        assert headers["Content-Type"] == "application/x-amz-json-1.1"
    else:
        assert f"<Code>{code}</Code>".encode() in body, body
    assert _state(serve) == before
    assert not processes_under(f"smmpi.serve.forkserver {serve.state}")
    ok, _, _ = send(serve.url, own, Raw(target="SageMaker.ListTrainingJobs", body=b"{}"))
    assert ok == 200  # still answering


def test_garbage_on_the_socket_does_not_take_the_server_down(serve: ServeProcess) -> None:
    host, port = serve.url[7:].split(":")
    for junk in (
        b"\x00\x01\x02garbage\r\n\r\n",
        b"GET / HTTP/9.9\r\n\r\n",
        b"POST " + b"/" * 70000,
    ):
        with socket.create_connection((host, int(port)), timeout=10) as sock:
            sock.sendall(junk)
            sock.shutdown(socket.SHUT_WR)
            sock.recv(1000)
    own = (serve.exports["AWS_ACCESS_KEY_ID"], serve.exports["AWS_SECRET_ACCESS_KEY"])
    ok, _, _ = send(serve.url, own, Raw(target="SageMaker.ListTrainingJobs", body=b"{}"))
    assert ok == 200


MALFORMED = [
    (b"\x00\x01\x02garbage\r\n\r\n", 400),
    (b"NONSENSE\r\n\r\n", 400),
    (b"GET / HTTP/9.9\r\n\r\n", 505),
    (b"GET /" + b"a" * 70000 + b" HTTP/1.1\r\n\r\n", 414),
    (b"GET / HTTP/1.1\r\n" + b"X-Many: y\r\n" * 200 + b"\r\n", 431),
    (b"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: abc\r\n\r\n{}", 400),
    (b"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: -5\r\n\r\n{}", 400),
    (b"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 411),
    (b"POST / HTTP/1.1\r\nHost: h\r\nX-Amz-Target: SageMaker.ListTrainingJobs\r\n"
     b"Content-Length: 5\r\n\r\nnope!", 403),
]  # fmt: skip


@pytest.mark.parametrize(("junk", "status"), MALFORMED, ids=[str(i) for i in range(len(MALFORMED))])
def test_malformed_http_gets_sagemakers_json_error_shape(
    serve: ServeProcess, junk: bytes, status: int
) -> None:
    host, port = serve.url[7:].split(":")
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(junk)
        sock.shutdown(socket.SHUT_WR)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    assert lines[0].startswith(f"HTTP/1.1 {status} "), answer[:300]
    assert "Content-Type: application/x-amz-json-1.1" in lines, lines
    error = json.loads(body)
    assert set(error) == {"__type", "message"} and error["__type"] and error["message"], error
