"""What serve holds of an ended job is bounded: moto keeps its objects and streams cold.

Jobs end through the runner's own end of a job (``JobRunner._guarded``), their work
replaced by what a job leaves (log events on two streams, three S3 objects, SageMaker's
transitions and end). After many jobs, moto's stores hold no object of the first ones
(a marker in place of each key and stream), the keys and streams kept made are at most
their bound, and memory grows by about 1 KB per job (names); yet every client still
gets the first job's record, listing, logs and artifacts as it got them when the job
ended, through boto3 over HTTP, and again after a restart.
"""

from __future__ import annotations

import gc
import json
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest

from smmpi.serve import Server, coldkeys, coldstreams
from smmpi.serve.logs import GROUP, _backend
from smmpi.serve.s3store import _backend as _s3_backend
from tests.serve.ended_jobs import PARTS, REGION, end_jobs, job_work, run_by_test

pytestmark = pytest.mark.aws

BUCKET = "bounded-bucket"
JOBS = 90  # past every bound: 270 keys (64 kept made), 180 streams (16)
MEASURED = 60  # the last jobs, whose growth is measured
PER_JOB = 2048  # bytes of memory an ended job may keep (its summary, its keys' names)


def _run_jobs(server: Server, names: list[str]) -> None:
    end_jobs(server, names, BUCKET)


def _started(state: Path, monkeypatch: pytest.MonkeyPatch) -> Server:
    server = Server(state=state).start()
    return run_by_test(server, monkeypatch, BUCKET, job_work(server, BUCKET, 30, 2048))


@pytest.fixture
def state(tmp_path: Path) -> Iterator[Path]:
    yield tmp_path / "state"


def _clients(server: Server) -> dict[str, Any]:
    return {
        service: boto3.client(  # type: ignore[call-overload]
            service,
            endpoint_url=server.url,
            region_name=REGION,
            aws_access_key_id=server.keys.access_key,
            aws_secret_access_key=server.keys.secret_key,
        )
        for service in ("s3", "logs", "sagemaker")
    }


def _bare(answer: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in answer.items() if k != "ResponseMetadata"}


def _answers(server: Server, name: str) -> dict[str, Any]:
    """Everything a client reads of job ``name``, through boto3 over HTTP."""
    c = _clients(server)
    s3, logs, sm = c["s3"], c["logs"], c["sagemaker"]
    found: dict[str, Any] = {"describe": _bare(sm.describe_training_job(TrainingJobName=name))}
    found["list"] = [
        s["TrainingJobName"]
        for s in sm.list_training_jobs(
            NameContains=name, StatusEquals="Completed", SortBy="Name", SortOrder="Ascending"
        )["TrainingJobSummaries"]
    ]
    for part in PARTS:
        got = s3.get_object(Bucket=BUCKET, Key=f"{name}/{part}")
        found[part] = (got["Body"].read(), got["ETag"], got["LastModified"], got["ContentType"])
        found[f"head {part}"] = _bare(s3.head_object(Bucket=BUCKET, Key=f"{name}/{part}"))
    found["listed"] = _bare(s3.list_objects_v2(Bucket=BUCKET, Prefix=f"{name}/"))
    described = logs.describe_log_streams(logGroupName=GROUP, logStreamNamePrefix=f"{name}/")
    found["streams"] = described["logStreams"]
    for stream in described["logStreams"]:
        found[stream["logStreamName"]] = logs.get_log_events(
            logGroupName=GROUP, logStreamName=stream["logStreamName"], startFromHead=True
        )["events"]
    found["filtered"] = logs.filter_log_events(
        logGroupName=GROUP, filterPattern="step",
        logStreamNames=[s["logStreamName"] for s in described["logStreams"]],
    )["events"]  # fmt: skip
    return found


def _all_listed(server: Server) -> list[str]:
    """Every job's name, ListTrainingJobs page by page (NextToken), newest first."""
    sm = _clients(server)["sagemaker"]
    names, token = [], None
    while True:
        page = sm.list_training_jobs(
            MaxResults=7, SortBy="CreationTime", SortOrder="Descending",
            **({"NextToken": token} if token else {}),
        )  # fmt: skip
        names += [s["TrainingJobName"] for s in page["TrainingJobSummaries"]]
        token = page.get("NextToken")
        if not token:
            return names


def _held(server: Server, name: str) -> tuple[list[Any], list[Any]]:
    """What moto's stores hold, unmade, for job ``name``'s keys and streams."""
    keys = _s3_backend().buckets[BUCKET].keys
    streams = _backend(REGION).groups[GROUP].streams
    return (
        [dict.get(keys, f"{name}/{part}") for part in PARTS],
        [v for k, v in dict.items(streams) if k.startswith(f"{name}/")],
    )


def _bounded(server: Server) -> None:
    keys = _s3_backend().buckets[BUCKET].keys
    streams = _backend(REGION).groups[GROUP].streams
    assert isinstance(keys, coldkeys.ColdKeys) and len(keys.recent) <= coldkeys.RECENT
    assert isinstance(streams, coldstreams.ColdStreams)
    assert len(streams.recent) <= coldstreams.RECENT
    assert not server.store.live  # no ended job's record in memory


def test_ended_jobs_keys_and_streams_stay_cold_and_answer_as_when_they_ended(
    state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    names = [f"bounded-{i:03d}" for i in range(JOBS)]
    server = _started(state, monkeypatch)
    try:
        _run_jobs(server, names[:1])
        first = _answers(server, names[0])
        assert len(first["streams"]) == 2 and len(first["filtered"]) == 60
        _run_jobs(server, names[1:])
        gc.collect()
        keys, streams = _held(server, names[0])
        assert keys == [coldkeys.COLD] * 3 and streams == [coldstreams.COLD] * 2
        _bounded(server)
        assert _answers(server, names[0]) == first
        assert _all_listed(server) == names[::-1]
        keys, streams = _held(server, names[0])  # read, and cold still
        assert keys == [coldkeys.COLD] * 3 and streams == [coldstreams.COLD] * 2
    finally:
        server.stop()
    again = Server(state=state).start()
    try:
        keys, streams = _held(again, names[0])
        assert keys == [coldkeys.COLD] * 3 and streams == [coldstreams.COLD] * 2
        assert _answers(again, names[0]) == first
        assert _all_listed(again) == names[::-1]
        _bounded(again)
    finally:
        again.stop()


def test_memory_grows_by_little_more_than_a_jobs_name_per_ended_job(
    state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    names = [f"growth-{i:03d}" for i in range(JOBS)]
    server = _started(state, monkeypatch)
    tracemalloc.start()  # before the first job: what a bounded cache drops is counted too
    try:
        _run_jobs(server, names[: JOBS - MEASURED])
        gc.collect()
        before = tracemalloc.get_traced_memory()[0]
        _run_jobs(server, names[JOBS - MEASURED :])
        gc.collect()
        after = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
        server.stop()
    per_job = (after - before) / MEASURED
    assert per_job < PER_JOB, f"{per_job:.0f} bytes kept per ended job"


def test_objects_kept_in_memory_and_a_former_state_folder_come_back_after_a_restart(
    state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A versioned object and a multipart one stay in memory (not cold), and are kept for the
    next start all the same; a state folder of an earlier serve (an ``index.json`` of its
    objects) starts with every object, and is kept the new way from then on."""
    server = _started(state, monkeypatch)
    try:
        s3 = _clients(server)["s3"]
        s3.put_bucket_versioning(Bucket=BUCKET, VersioningConfiguration={"Status": "Enabled"})
        for body in (b"first", b"second"):
            s3.put_object(Bucket=BUCKET, Key="versioned", Body=body)
        upload = s3.create_multipart_upload(Bucket=BUCKET, Key="multipart")["UploadId"]
        part = s3.upload_part(Bucket=BUCKET, Key="multipart", UploadId=upload, PartNumber=1,
                              Body=b"in one part")  # fmt: skip
        s3.complete_multipart_upload(
            Bucket=BUCKET, Key="multipart", UploadId=upload,
            MultipartUpload={"Parts": [{"ETag": part["ETag"], "PartNumber": 1}]},
        )  # fmt: skip
        held = _s3_backend().buckets[BUCKET].keys
        assert isinstance(dict.get(held, "versioned"), list)
        assert isinstance(dict.get(held, "multipart"), list)
    finally:
        server.stop()
    # the layout an earlier serve kept: buckets and objects in one index, no descriptions
    s3_folder = state / "s3"
    legacy = {"buckets": json.loads((s3_folder / "buckets.json").read_bytes()), "objects": {}}
    for key, body in (("versioned", b"second"), ("multipart", b"in one part")):
        oid = coldkeys.object_id(BUCKET, key)
        assert (s3_folder / "objects" / oid).read_bytes() == body
        legacy["objects"][oid] = {"bucket": BUCKET, "key": key, "etag": "x"}
        (s3_folder / "keys" / oid).unlink()
    (s3_folder / "index.json").write_text(json.dumps(legacy))
    (s3_folder / "buckets.json").unlink()
    for _ in range(2):  # the earlier layout, then the new one it was turned into
        again = Server(state=state).start()
        try:
            s3 = _clients(again)["s3"]
            assert s3.get_object(Bucket=BUCKET, Key="versioned")["Body"].read() == b"second"
            assert s3.get_object(Bucket=BUCKET, Key="multipart")["Body"].read() == b"in one part"
        finally:
            again.stop()
        assert not (s3_folder / "index.json").exists()
        assert (s3_folder / "buckets.json").stat().st_mode & 0o777 == 0o600


def _grants(s3: Any, key: str) -> list[str]:
    return sorted(g["Permission"] for g in s3.get_object_acl(Bucket=BUCKET, Key=key)["Grants"])


def test_a_change_to_a_cold_object_is_kept_when_it_goes_cold_again_and_after_a_restart(
    state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An ACL put on an object read back from disk, then the object pushed out of the keys
    kept made: the ACL, the object's metadata and content type are still its own, and after
    a restart too."""
    server = _started(state, monkeypatch)
    try:
        s3 = _clients(server)["s3"]
        s3.put_object(Bucket=BUCKET, Key="changed", Body=b"data", ContentType="text/x-mine",
                      Metadata={"origin": "test"})  # fmt: skip
        for i in range(coldkeys.RECENT + 8):  # "changed" leaves the keys kept made
            s3.put_object(Bucket=BUCKET, Key=f"filler/{i}", Body=b"x")
        assert _s3_backend().buckets[BUCKET].keys.recent.get("changed") is None
        before = _grants(s3, "changed")
        s3.put_object_acl(Bucket=BUCKET, Key="changed", ACL="public-read")
        changed = _grants(s3, "changed")
        assert changed != before and "READ" in changed
        for i in range(coldkeys.RECENT + 8):
            s3.put_object(Bucket=BUCKET, Key=f"more/{i}", Body=b"x")
        assert dict.get(_s3_backend().buckets[BUCKET].keys, "changed") is coldkeys.COLD
        assert _s3_backend().buckets[BUCKET].keys.recent.get("changed") is None
        assert _grants(s3, "changed") == changed
    finally:
        server.stop()
    again = Server(state=state).start()
    try:
        s3 = _clients(again)["s3"]
        assert _grants(s3, "changed") == changed
        head = s3.head_object(Bucket=BUCKET, Key="changed")
        assert head["ContentType"] == "text/x-mine" and head["Metadata"] == {"origin": "test"}
        assert s3.get_object(Bucket=BUCKET, Key="changed")["Body"].read() == b"data"
    finally:
        again.stop()
