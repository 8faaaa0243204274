"""Under ``smmpi serve``, a rank's link out of its instance never reaches S3.

The rank links its model folder to serve's own state folder, which holds serve's key
(``credentials.json``) and every job's record: the rank cannot read them, and the job's
archives must not carry them to S3 either.
"""

from __future__ import annotations

import io
import json
import tarfile

import pytest

from tests.serve.serving import ServeProcess, dry_run_request, put_source, script_source, wait_end

pytestmark = pytest.mark.aws

LINK_TO_STATE = """\
import os, shutil
from mpi4py import MPI
comm = MPI.COMM_WORLD
comm.Barrier()
if comm.Get_rank() == 0:
    model = os.environ["SM_MODEL_DIR"]
    shutil.rmtree(model)
    os.symlink({state!r}, model)
    print("can read the key:", os.path.exists(os.path.join(model, "credentials.json")))
comm.Barrier()
"""


def test_a_model_folder_linked_to_serves_state_uploads_nothing_of_it(
    serve: ServeProcess, bucket: str, job_name: str
) -> None:
    state = serve.state.resolve()
    assert (state / "credentials.json").is_file()
    secret = serve.exports["AWS_SECRET_ACCESS_KEY"]
    request = dry_run_request(serve.env, job_name, bucket)
    request["HyperParameters"]["sagemaker_program"] = json.dumps("train.py")
    put_source(serve, request, script_source(LINK_TO_STATE.format(state=str(state))))
    serve.client("sagemaker").create_training_job(**request)
    desc = wait_end(serve, job_name)
    assert desc["TrainingJobStatus"] == "Failed"
    assert f"algo-1's /opt/ml/model is a link (to {state})" in desc["FailureReason"]
    s3 = serve.client("s3")
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=bucket).get("Contents", [])]
    for key in (k for k in keys if k.endswith(".tar.gz")):
        body = s3.get_object(Bucket=bucket, Key=key)["Body"].read()
        with tarfile.open(fileobj=io.BytesIO(body)) as tar:
            names = tar.getnames()
            data = b"".join(
                f.read() for m in tar.getmembers() if m.isfile() and (f := tar.extractfile(m))
            )
        assert not [n for n in names if "credentials" in n or n.startswith("jobs")], (key, names)
        assert secret.encode() not in data, key
    assert f"{job_name}/output/model.tar.gz" not in keys


@pytest.mark.parametrize("where", ["channel", "checkpoints"])
def test_a_local_file_as_a_channel_or_checkpoint_uri_is_refused_and_no_job_made(
    serve: ServeProcess, bucket: str, job_name: str, where: str
) -> None:
    """serve reads channels and checkpoints from its S3 only: ``file:///proc/self/environ``
    (serve's own environment) is SageMaker's ValidationException, and no job exists."""
    request = dry_run_request(serve.env, job_name, bucket)
    uri = "file:///proc/self/environ"
    if where == "channel":
        source = {"S3DataSource": {"S3DataType": "S3Prefix", "S3Uri": uri}}
        request["InputDataConfig"] = [{"ChannelName": "train", "DataSource": source}]
    else:
        request["CheckpointConfig"] = {"S3Uri": uri}
    sm = serve.client("sagemaker")
    with pytest.raises(sm.exceptions.ClientError) as err:
        sm.create_training_job(**request)
    assert err.value.response["Error"]["Code"] == "ValidationException"
    assert "s3Uri" in err.value.response["Error"]["Message"]
    names = [j["TrainingJobName"] for j in sm.list_training_jobs()["TrainingJobSummaries"]]
    assert job_name not in names
