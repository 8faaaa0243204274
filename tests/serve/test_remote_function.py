"""SDK v2's ``@remote(use_mpirun=True)`` pointed at ``smmpi serve``: the SDK's client side
(the pickled function and its job script uploaded to serve's S3, CreateTrainingJob, the wait)
and its job side (job_driver.sh, the bootstrap, mpirun on algo-1, invoke_function on every
rank) run unchanged; the ranks reach S3 through the job's own endpoint, inside each instance,
with the key serve minted for the job, which reaches the job's own folder only and only while
the job runs. A job that is no ``@remote`` gets neither."""

from __future__ import annotations

import ast
import json
import os
import socket
import subprocess
from pathlib import Path
from typing import Any, NamedTuple

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError, ConnectionClosedError, EndpointConnectionError

from smmpi.platform.instance_endpoint import _hand_over
from smmpi.serve import Server
from smmpi.serve.worker import WORKER_ENV, WORKER_RELAY
from tests.helpers import BIN
from tests.serve.serving import (
    REGION,
    ROLE,
    ServeProcess,
    dry_run_request,
    log_lines,
    put_source,
    script_source,
    wait_end,
)

pytestmark = pytest.mark.aws

CLIENT = """
import os
import sagemaker
from sagemaker.remote_function import remote

session = sagemaker.Session(default_bucket="{bucket}")


@remote(
    instance_count={instances},
    nproc_per_node=2,
    use_mpirun=True,
    instance_type="ml.c5.2xlarge",
    image_uri="763104351884.dkr.ecr.us-west-2.amazonaws.com/pytorch-training:2.3.0-cpu-py311",
    role="{role}",
    sagemaker_session=session,
    s3_root_uri="s3://{bucket}/rf",
    job_name_prefix="{prefix}",
)
def world(x, fail_rank):
    import socket

    import boto3
    from botocore.exceptions import ClientError
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    if comm.Get_rank() == fail_rank:
        raise ValueError(f"rank {{comm.Get_rank()}} refuses")
    s3 = boto3.client("s3")
    try:  # the job's key reaches its own folder only
        s3.list_objects_v2(Bucket="{bucket}", Prefix="elsewhere/")
        outside = "listed"
    except ClientError as err:
        outside = err.response["Error"]["Code"]
    sizes = comm.allgather((socket.gethostname(), comm.Get_size()))
    return {{"sum": comm.allreduce(x + comm.Get_rank()), "world": sizes, "outside": outside,
             "serve_key": os.environ["AWS_ACCESS_KEY_ID"] == "{serve_key}"}}


try:
    print("RESULT", world(7, {fail_rank}))
except Exception as err:
    print("RAISED", type(err).__name__, err)
"""


def _call(
    serve: ServeProcess, guard: dict[str, str], tmp_path: Path, **fields: Any
) -> tuple[str, dict[str, Any]]:
    """The decorated function called by a client of serve; its output and the job's end."""
    script = CLIENT.format(role=ROLE, serve_key=serve.exports["AWS_ACCESS_KEY_ID"], **fields)
    done = subprocess.run(
        [str(BIN / "python"), "-c", script],
        env={**serve.env, **guard},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=400,
    )
    sm = serve.client("sagemaker")
    jobs = sm.list_training_jobs(NameContains=fields["prefix"], MaxResults=100)
    (name,) = [j["TrainingJobName"] for j in jobs["TrainingJobSummaries"]]
    desc = wait_end(serve, name)
    assert desc["TrainingJobStatus"] in ("Completed", "Failed"), desc
    return done.stdout + done.stderr, desc


def test_remote_mpirun_2x2_returns_what_its_ranks_computed(
    serve: ServeProcess, bucket: str, guard: dict[str, str], tmp_path: Path
) -> None:
    out, desc = _call(
        serve, guard, tmp_path, bucket=bucket, instances=2, prefix="rf-two", fail_rank=-1
    )
    result = [line for line in out.splitlines() if line.startswith("RESULT ")]
    assert result, out[-4000:]
    value = ast.literal_eval(result[0][len("RESULT ") :])
    # the job script runs mpirun --host algo-1:2,algo-2:2 -np 2: -np is per node, so
    # SageMaker starts 2 ranks, both on algo-1
    assert value["world"] == [("algo-1", 2), ("algo-1", 2)]
    assert value["sum"] == 7 + 0 + 7 + 1
    assert value["outside"] == "AccessDenied"
    assert value["serve_key"] is False
    assert desc["TrainingJobStatus"] == "Completed"
    logs = "\n".join(
        line for lines in log_lines(serve, desc["TrainingJobName"]).values() for line in lines
    )
    assert "mpirun -np 2 (its -np is per node), so 2 of 2 x 2 = 4 ranks started" in logs
    # the SDK's bootstrap logs every variable, the job's key masked
    keys = [line for line in logs.splitlines() if "AWS_SECRET_ACCESS_KEY" in line]
    assert keys and all(line.endswith("AWS_SECRET_ACCESS_KEY=******") for line in keys), keys
    # each instance unpacked the workspace at the top of a root of its own, not this machine's
    assert "Changing workspace to sagemaker_remote_function_workspace" in logs
    assert not os.path.lexists("/sagemaker_remote_function_workspace")


def test_remote_mpirun_rank_that_raises_gives_its_exception_and_the_failed_rank(
    serve: ServeProcess, bucket: str, guard: dict[str, str], tmp_path: Path
) -> None:
    out, desc = _call(
        serve, guard, tmp_path, bucket=bucket, instances=3, prefix="rf-raise", fail_rank=1
    )
    # the SDK raises the exception the rank raised, which the job put in S3
    assert "RAISED ValueError rank 1 refuses" in out, out[-4000:]
    assert desc["TrainingJobStatus"] == "Failed"
    # the job script's failure file (the SDK's repr of the exception), then smmpi's line
    assert desc["FailureReason"] == (
        "ValueError('rank 1 refuses')\nsmmpi: rank 1 (algo-1) failed: exit code 1"
    )


def _request(name: str, bucket: str, folder: str) -> dict[str, Any]:
    """An @remote request's parts that serve reads to mint a key."""
    return {
        "TrainingJobName": name,
        "RoleArn": ROLE,
        "ResourceConfig": {"InstanceCount": 2},
        "InputDataConfig": [{"ChannelName": "sagemaker_remote_function_bootstrap"}],
        "AlgorithmSpecification": {
            "ContainerEntrypoint": ["/bin/bash", "job_driver.sh"],
            "ContainerArguments": ["--s3_base_uri", f"s3://{bucket}/{folder}", "--region", REGION],
        },
    }


def _s3(url: str, keys: dict[str, str]) -> Any:
    return boto3.client(
        "s3",
        endpoint_url=url,
        region_name=REGION,
        aws_access_key_id=keys["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=keys["AWS_SECRET_ACCESS_KEY"],
        config=Config(retries={"max_attempts": 1}),
    )


def _code(call: Any, **params: Any) -> str:
    try:
        call(**params)
    except ClientError as err:
        return str(err.response["Error"]["Code"])
    return "ok"


def test_job_key_reaches_its_folder_only_and_ends_with_the_job(tmp_path: Path) -> None:
    with Server(state=tmp_path / "state") as server:
        own = boto3.client(
            "s3",
            endpoint_url=server.url,
            region_name=REGION,
            aws_access_key_id=server.keys.access_key,
            aws_secret_access_key=server.keys.secret_key,
        )
        for name in ("jobs", "other"):
            own.create_bucket(Bucket=name, CreateBucketConfiguration={"LocationConstraint": REGION})
        own.put_object(Bucket="other", Key="rf/job-1/results/a", Body=b"another bucket's")
        own.put_object(Bucket="jobs", Key="rf/job-10/../x", Body=b"x")
        own.put_object(Bucket="jobs", Key="rf/job-1-other/x", Body=b"x")
        work = tmp_path / "work"
        work.mkdir()
        access = server.runner.access
        given = access.open("job-1", _request("job-1", "jobs", "rf/job-1"), work, REGION)
        keys = json.loads(given[WORKER_ENV])
        assert keys["AWS_ENDPOINT_URL_S3"] == "http://127.0.0.1:9000"
        assert keys["AWS_ACCESS_KEY_ID"] != server.keys.access_key
        s3 = _s3(server.url, keys)
        assert _code(s3.put_object, Bucket="jobs", Key="rf/job-1/results/a", Body=b"1") == "ok"
        assert s3.get_object(Bucket="jobs", Key="rf/job-1/results/a")["Body"].read() == b"1"
        assert _code(s3.list_objects_v2, Bucket="jobs", Prefix="rf/job-1/") == "ok"
        refused = {
            "sibling": _code(s3.get_object, Bucket="jobs", Key="rf/job-1-other/x"),
            "dots": _code(s3.get_object, Bucket="jobs", Key="rf/job-1/../job-10/../x"),
            "root": _code(s3.list_objects_v2, Bucket="jobs", Prefix="rf/"),
            "bucket": _code(s3.list_objects_v2, Bucket="jobs"),
            "other": _code(s3.get_object, Bucket="other", Key="rf/job-1/results/a"),
            "copy": _code(
                s3.copy_object,
                Bucket="jobs",
                Key="rf/job-1/c",
                CopySource={"Bucket": "jobs", "Key": "rf/job-1-other/x"},
            ),
            "copy_bucket": _code(
                s3.copy_object,
                Bucket="jobs",
                Key="rf/job-1/c",
                CopySource={"Bucket": "other", "Key": "rf/job-1/results/a"},
            ),
            "delete_bucket": _code(s3.delete_bucket, Bucket="jobs"),
        }
        assert set(refused.values()) == {"AccessDenied"}, refused
        twice = _signed_get(
            f"{server.url}/jobs?list-type=2&prefix=rf%2F&prefix=rf%2Fjob-1%2F", keys, "s3"
        )
        assert twice.status_code == 403 and b"AccessDenied" in twice.content
        sm = boto3.client(
            "sagemaker",
            endpoint_url=server.url,
            region_name=REGION,
            aws_access_key_id=keys["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=keys["AWS_SECRET_ACCESS_KEY"],
        )
        assert _code(sm.list_training_jobs) == "AccessDenied"
        access.close("job-1")  # as the job ends (JobRunner._end)
        assert _code(s3.get_object, Bucket="jobs", Key="rf/job-1/results/a") == (
            "InvalidAccessKeyId"
        )
        assert not (work / "endpoint.sock").exists()


def test_a_job_that_is_no_remote_gets_no_endpoint_and_no_key(
    serve: ServeProcess, bucket: str, job_name: str
) -> None:
    probe = """
import os, socket
names = sorted(k for k in os.environ if k.startswith("AWS_"))
try:
    socket.create_connection(("127.0.0.1", 9000), timeout=5).close()
    reached = "reached"
except OSError as err:
    reached = type(err).__name__
print("PROBE", socket.gethostname(), names, reached, flush=True)
"""
    request = dry_run_request(serve.env, job_name, bucket, "--instances", "2", "--ppn", "1")
    put_source(serve, request, script_source(probe, "demo.py"))
    serve.client("sagemaker").create_training_job(**request)
    desc = wait_end(serve, job_name)
    assert desc["TrainingJobStatus"] == "Completed", desc.get("FailureReason")
    lines = [line for lines in log_lines(serve, job_name).values() for line in lines]
    probes = sorted(line.split("PROBE ", 1)[1] for line in lines if "PROBE " in line)
    assert probes == [
        "algo-1 [] ConnectionRefusedError",
        "algo-2 [] ConnectionRefusedError",
    ], lines[-40:]


@pytest.mark.parametrize("count", ["0", "two"])
def test_remote_job_with_a_bad_nproc_per_node_fails_before_anything_runs(
    serve: ServeProcess, bucket: str, job_name: str, count: str
) -> None:
    image = "763104351884.dkr.ecr.us-west-2.amazonaws.com/pytorch-training:2.3.0-cpu-py311"
    channel = "sagemaker_remote_function_bootstrap"
    uri = f"s3://{bucket}/rf/{job_name}"
    serve.client("sagemaker").create_training_job(
        TrainingJobName=job_name,
        RoleArn=ROLE,
        AlgorithmSpecification={
            "TrainingImage": image,
            "TrainingInputMode": "File",
            "ContainerEntrypoint": ["/bin/bash", f"/opt/ml/input/data/{channel}/job_driver.sh"],
            "ContainerArguments": [
                "--s3_base_uri",
                uri,
                "--region",
                REGION,
                "--distribution",
                "mpirun",
                "--user_nproc_per_node",
                count,
            ],
        },
        InputDataConfig=[
            {
                "ChannelName": channel,
                "DataSource": {
                    "S3DataSource": {"S3DataType": "S3Prefix", "S3Uri": f"{uri}/{channel}"}
                },
            }
        ],
        OutputDataConfig={"S3OutputPath": uri},
        ResourceConfig={"InstanceType": "ml.c5.2xlarge", "InstanceCount": 2, "VolumeSizeInGB": 30},
        StoppingCondition={"MaxRuntimeInSeconds": 600},
    )
    desc = wait_end(serve, job_name)
    assert desc["TrainingJobStatus"] == "Failed"
    assert desc["FailureReason"] == (
        f"ClientError: invalid ContainerArguments --user_nproc_per_node: {count!r}; "
        "allowed: a count >= 1"
    ), desc["FailureReason"]
    assert not (serve.state / "runs" / job_name).exists()


def test_job_endpoint_answers_the_job_key_only_and_closes_with_the_job(tmp_path: Path) -> None:
    """An instance's hand-over, as instance_endpoint does it (here on this machine's loopback,
    a free port): serve answers the socket it got, for the job's key only, until the job ends."""
    with Server(state=tmp_path / "state") as server:
        boto3.client(
            "s3",
            endpoint_url=server.url,
            region_name=REGION,
            aws_access_key_id=server.keys.access_key,
            aws_secret_access_key=server.keys.secret_key,
        ).create_bucket(Bucket="jobs", CreateBucketConfiguration={"LocationConstraint": REGION})
        work = tmp_path / "work"
        work.mkdir()
        given = server.runner.access.open(
            "job-2", _request("job-2", "jobs", "rf/job-2"), work, REGION
        )
        relay, keys = given[WORKER_RELAY], json.loads(given[WORKER_ENV])
        with socket.socket() as connected:  # not a listening socket: refused
            connected.bind(("127.0.0.1", 0))
            assert _hand_over(relay, connected).startswith(b"refused")
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        url = f"http://127.0.0.1:{listener.getsockname()[1]}"
        assert _hand_over(relay, listener) == b"ok\n"
        listener.close()  # serve holds the only copy now, as after the instance's exec
        s3 = _s3(url, keys)
        assert _code(s3.put_object, Bucket="jobs", Key="rf/job-2/results/a", Body=b"2") == "ok"
        serves = {
            "AWS_ACCESS_KEY_ID": server.keys.access_key,
            "AWS_SECRET_ACCESS_KEY": server.keys.secret_key,
        }
        assert _code(_s3(url, serves).list_buckets) == "InvalidAccessKeyId"
        server.runner.access.close("job-2")
        with pytest.raises((EndpointConnectionError, ConnectionClosedError)):
            s3.get_object(Bucket="jobs", Key="rf/job-2/results/a")  # nothing answers there now


class _Answer(NamedTuple):
    status_code: int
    content: bytes


def _signed_get(url: str, keys: dict[str, str], service: str) -> _Answer:
    """A GET of ``url`` signed with ``keys`` by botocore's own signer, sent as it is."""
    import urllib.error
    import urllib.request

    from botocore.auth import S3SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    request = AWSRequest(method="GET", url=url, headers={})
    creds = Credentials(keys["AWS_ACCESS_KEY_ID"], keys["AWS_SECRET_ACCESS_KEY"])
    S3SigV4Auth(creds, service, REGION).add_auth(request)
    prepared = request.prepare()
    sent = urllib.request.Request(url, headers=dict(prepared.headers), method="GET")
    try:
        with urllib.request.urlopen(sent, timeout=30) as answer:
            return _Answer(answer.status, answer.read())
    except urllib.error.HTTPError as err:
        return _Answer(err.code, err.read())
