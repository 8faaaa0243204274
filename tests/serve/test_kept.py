"""An ended job's log events are read from disk, and every Logs operation answers as before.

moto answers GetLogEvents, FilterLogEvents and DescribeLogStreams from the events it
holds while the job runs; once the job ends (and after a restart) the same operations,
with paging, patterns and tokens, must give the same answers from serve's files.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import boto3
import pytest

from smmpi.serve import Server
from smmpi.serve.kept import KeptEvents
from smmpi.serve.logs import GROUP, _backend

pytestmark = pytest.mark.aws

REGION = "us-west-2"
JOB = "kept-logs"


def _client(server: Server) -> Any:
    return boto3.client(
        "logs", endpoint_url=server.url, region_name=REGION,
        aws_access_key_id=server.keys.access_key, aws_secret_access_key=server.keys.secret_key,
    )  # fmt: skip


def _pages(call: Callable[..., Any], token_key: str, **kwargs: Any) -> list[Any]:
    """Every page of a paged call, each without its request metadata."""
    pages, token = [], None
    for _ in range(50):
        page = call(**kwargs, **({token_key: token} if token else {}))
        page.pop("ResponseMetadata")
        pages.append(page)
        following = page.get("nextForwardToken" if token_key == "nextToken" else "nextToken")
        if token_key == "nextToken" and "nextForwardToken" in page:
            if following == token:
                break
        elif not following:
            break
        token = following
    return pages


def _answers(server: Server, streams: dict[str, str], created: bool = True) -> dict[str, Any]:
    logs = _client(server)
    first = streams["algo-1"]
    described = logs.describe_log_streams(logGroupName=GROUP, logStreamNamePrefix=f"{JOB}/")
    shown = [
        {k: v for k, v in s.items() if created or k != "creationTime"}
        for s in described["logStreams"]
    ]
    return {
        "streams": shown,
        "forward": _pages(
            logs.get_log_events, "nextToken", logGroupName=GROUP, logStreamName=first,
            startFromHead=True, limit=7,
        ),
        "tail": logs.get_log_events(logGroupName=GROUP, logStreamName=first, limit=5)["events"],
        "filtered": _pages(
            logs.filter_log_events, "nextToken", logGroupName=GROUP,
            logStreamNamePrefix=f"{JOB}/", filterPattern="even", limit=4,
        ),
    }  # fmt: skip


def test_an_ended_jobs_events_answer_from_disk_as_moto_answered(tmp_path: Path) -> None:
    state = tmp_path / "state"
    with Server(state=state) as server:
        streams = server.logs.open(JOB, REGION, ["algo-1", "algo-2"])
        for host, stream in streams.items():
            for batch in range(6):
                lines = [f"{host} line {batch * 5 + i} {'even' if i % 2 == 0 else 'odd'}"
                         for i in range(5)]  # fmt: skip
                server.logs.append(JOB, REGION, host, stream, lines)
        running = _answers(server, streams)
        assert sum(len(p["events"]) for p in running["forward"]) == 30
        server.logs.close(JOB)
        kept = _backend(REGION).groups[GROUP].streams[streams["algo-1"]].events
        assert isinstance(kept, KeptEvents)  # no event of the ended job is held in memory
        assert _answers(server, streams) == running
        # a client may still write to an ended job's stream: moto holds it again, whole
        _client(server).put_log_events(
            logGroupName=GROUP, logStreamName=streams["algo-2"],
            logEvents=[{"timestamp": int(time.time() * 1000) + 60_000, "message": "late even"}],
        )  # fmt: skip
        late = _client(server).get_log_events(
            logGroupName=GROUP, logStreamName=streams["algo-2"], startFromHead=True
        )["events"]
        assert [e["message"] for e in late][-2:] == ["algo-2 line 29 even", "late even"]
        assert len(late) == 31
    with Server(state=state) as again:
        assert _answers(again, streams, created=False) == {
            **running,
            "streams": [
                {k: v for k, v in s.items() if k != "creationTime"} for s in running["streams"]
            ],
        }
