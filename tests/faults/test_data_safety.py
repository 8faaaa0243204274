"""Never delete or overwrite what smmpi did not create; never create what was not asked for.

moto accepts two training jobs of the same name, and SageMaker does not. So
SageMaker calls go through ``UniqueNames``, a small proxy in front of the
moto server that answers CreateTrainingJob with SageMaker's ``ResourceInUse``
when the name is taken (or, for names in ``racing``, as if another client had
just taken it). S3 and STS calls go straight to moto.
"""

from __future__ import annotations

import http.client
import json
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest

from tests.helpers import MotoServer, smmpi

ROLE = "arn:aws:iam::123456789012:role/x"

pytestmark = pytest.mark.aws
REGION = "us-west-2"


class UniqueNames(ThreadingHTTPServer):
    """Forwards every request to moto; refuses a second CreateTrainingJob of one name."""

    def __init__(self, moto: MotoServer) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.moto = moto
        self.racing: set[str] = set()
        self.creates: list[str] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def taken(self, name: str) -> bool:
        if name in self.racing:
            return True
        jobs = self.moto.boto3_client("sagemaker").list_training_jobs()["TrainingJobSummaries"]
        return any(j["TrainingJobName"] == name for j in jobs)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: UniqueNames

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.headers.get("X-Amz-Target", "").endswith(".CreateTrainingJob"):
            name = json.loads(body)["TrainingJobName"]
            self.server.creates.append(name)
            if self.server.taken(name):
                arn = f"arn:aws:sagemaker:{REGION}:123456789012:training-job/{name}"
                self._answer(
                    400,
                    {
                        "__type": "ResourceInUse",
                        "Message": "Training job names must be unique within an AWS account "
                        f"and region, and a training job with this name already exists ({arn})",
                    },
                )
                return
        target = urlparse(self.server.moto.url)
        conn = http.client.HTTPConnection(target.hostname or "", target.port, timeout=30)
        headers = {k: v for k, v in self.headers.items() if k.lower() != "host"}
        conn.request("POST", self.path, body=body, headers=headers)
        reply = conn.getresponse()
        data = reply.read()
        self.send_response(reply.status)
        for key, value in reply.getheaders():
            if key.lower() not in ("content-length", "transfer-encoding", "connection"):
                self.send_header(key, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        conn.close()

    def _answer(self, status: int, payload: dict[str, str]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/x-amz-json-1.1")
        self.send_header("x-amzn-ErrorType", payload["__type"])
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def unique(moto_server: MotoServer) -> Iterator[UniqueNames]:
    server = UniqueNames(moto_server)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def aws(moto_server: MotoServer, unique: UniqueNames, env: dict[str, str]) -> dict[str, str]:
    return {**env, **moto_server.aws_env(), "AWS_ENDPOINT_URL_SAGEMAKER": unique.url}


def objects(moto: MotoServer) -> dict[str, bytes]:
    """Every object on the server, ``bucket/key`` -> bytes."""
    s3 = moto.boto3_client("s3")
    out = {}
    for bucket in s3.list_buckets()["Buckets"]:
        for obj in s3.list_objects_v2(Bucket=bucket["Name"]).get("Contents", []):
            body = s3.get_object(Bucket=bucket["Name"], Key=obj["Key"])["Body"].read()
            out[f"{bucket['Name']}/{obj['Key']}"] = body
    return out


def make_bucket(moto: MotoServer, name: str) -> None:
    moto.boto3_client("s3").create_bucket(
        Bucket=name, CreateBucketConfiguration={"LocationConstraint": REGION}
    )


def submit(aws: dict[str, str], entry: str, *extra: str) -> subprocess.CompletedProcess[str]:
    args = ["submit", entry, "-N", "2", "-n", "2", "--role", ROLE, "--no-wait", *extra]
    return smmpi(args, aws)


def one_line(done: subprocess.CompletedProcess[str], code: int, *needles: str) -> str:
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == code, (done.returncode, done.stderr)
    (line,) = done.stderr.strip().splitlines()[-1:]
    for needle in needles:
        assert needle in line, (needle, line)
    return line


# ---------------------------------------------------------------- a job name already taken


def test_the_proxy_refuses_a_taken_name(moto_server: MotoServer, unique: UniqueNames) -> None:
    """The fake is real: a second create of one name through it is SageMaker's ResourceInUse."""
    import boto3
    from botocore.exceptions import ClientError

    sm = boto3.client(
        "sagemaker",
        endpoint_url=unique.url,
        region_name=REGION,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
    unique.racing.add("taken")
    with pytest.raises(ClientError, match="ResourceInUse"):
        sm.create_training_job(
            TrainingJobName="taken",
            AlgorithmSpecification={"TrainingImage": "img", "TrainingInputMode": "File"},
            RoleArn=ROLE,
            OutputDataConfig={"S3OutputPath": "s3://b/"},
            ResourceConfig={
                "InstanceType": "ml.c5.xlarge",
                "InstanceCount": 1,
                "VolumeSizeInGB": 1,
            },
            StoppingCondition={"MaxRuntimeInSeconds": 60},
        )


def test_a_taken_job_name_keeps_the_existing_jobs_code(
    moto_server: MotoServer, unique: UniqueNames, aws: dict[str, str], tmp_path: Path
) -> None:
    make_bucket(moto_server, "bkt")
    first = submit(aws, "demo", "--bucket", "bkt", "--job-name", "dup")
    assert first.returncode == 0, first.stderr
    before = objects(moto_server)
    assert len(before) == 1
    other = tmp_path / "other.py"
    other.write_text("print('a different program')\n")
    second = submit(aws, str(other), "--bucket", "bkt", "--job-name", "dup", "--json")
    one_line(second, 2, "dup", "already")
    assert second.stdout == ""
    assert objects(moto_server) == before  # the first job's code: same key, same bytes
    assert unique.creates == ["dup"]  # the second never reached CreateTrainingJob


def test_a_name_taken_during_the_submit_deletes_only_what_this_call_wrote(
    moto_server: MotoServer, unique: UniqueNames, aws: dict[str, str]
) -> None:
    """Another client creates the job between smmpi's check and its CreateTrainingJob."""
    make_bucket(moto_server, "bkt")
    theirs = {"bkt/race/source/sourcedir.tar.gz": b"the other client's code"}
    moto_server.boto3_client("s3").put_object(
        Bucket="bkt", Key="race/source/sourcedir.tar.gz", Body=b"the other client's code"
    )
    unique.racing.add("race")
    done = submit(aws, "demo", "--bucket", "bkt", "--job-name", "race")
    one_line(done, 2, "race", "already")
    assert objects(moto_server) == theirs


def test_a_local_job_name_in_use_is_refused_and_the_first_run_untouched(
    env: dict[str, str],
) -> None:
    args = ["submit", "demo", "-N", "1", "-n", "2", "--local", "--job-name", "twice"]
    first = smmpi(args, env)
    assert first.returncode == 0, first.stderr
    folder = Path(env["HOME"]) / ".smmpi" / "local-jobs" / "twice"
    snapshot = {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    second = smmpi(args, env)
    one_line(second, 2, "twice", "local-jobs")
    assert {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()} == snapshot


def test_a_local_job_that_fails_on_bad_input_leaves_no_folder(env: dict[str, str]) -> None:
    """An s3:// channel that cannot be read locally fails before the run: nothing stays behind."""
    done = smmpi(
        [
            "submit",
            "demo",
            "-N",
            "1",
            "-n",
            "2",
            "--local",
            "--job-name",
            "nodata",
            "--input",
            "train=s3://nosuch/x",
        ],
        {**env, "AWS_ENDPOINT_URL": "http://127.0.0.1:9", "AWS_REGION": REGION},
    )
    assert done.returncode != 0
    assert "Traceback" not in done.stderr, done.stderr
    assert not (Path(env["HOME"]) / ".smmpi" / "local-jobs" / "nodata").exists()


# ---------------------------------------------------------------- buckets


def test_a_bucket_that_does_not_exist_is_refused_not_created(
    moto_server: MotoServer, aws: dict[str, str]
) -> None:
    done = submit(aws, "demo", "--bucket", "my-misspelt-bucket", "--json")
    one_line(done, 2, "my-misspelt-bucket", "smmpi infra deploy", "--create-bucket")
    assert done.stdout == ""
    assert moto_server.boto3_client("s3").list_buckets()["Buckets"] == []
    assert moto_server.boto3_client("sagemaker").list_training_jobs()["TrainingJobSummaries"] == []


def test_create_bucket_creates_it_when_asked(moto_server: MotoServer, aws: dict[str, str]) -> None:
    done = submit(aws, "demo", "--bucket", "fresh-bucket", "--create-bucket")
    assert done.returncode == 0, done.stderr
    assert "created bucket s3://fresh-bucket" in done.stderr
    assert [k.split("/")[0] for k in objects(moto_server)] == ["fresh-bucket"]


# ---------------------------------------------------------------- fetch


def test_fetch_of_a_job_without_archives_leaves_no_folder(
    moto_server: MotoServer, aws: dict[str, str], tmp_path: Path
) -> None:
    make_bucket(moto_server, "bkt")
    assert submit(aws, "demo", "--bucket", "bkt", "--job-name", "noart").returncode == 0
    to = tmp_path / "fetched"
    done = smmpi(["fetch", "noart", "--to", str(to)], aws)
    one_line(done, 1, "noart", "no model or output archive")
    assert not to.exists()
