"""The training-job store: one record per job, in DescribeTrainingJob's shape, kept on disk.

Each job is a JSON file under ``STATE/jobs`` (its name passed SageMaker's
pattern first, so it is one plain file name), rewritten 0600 at every change,
so a restart finds every job as it was. Times are epoch seconds, which is how
SageMaker's JSON protocol sends timestamps.

Memory holds the whole record of the jobs that have not ended, and only
ListTrainingJobs' summary of the others, as one tuple (its name, region, three
times and two statuses; the ARN is made from the first two): an ended job's
record is read from its file when asked for, so serve's memory grows by
little more than a job's name with the jobs it ran.
"""

from __future__ import annotations

import copy
import json
import threading
import time
from pathlib import Path
from typing import Any

from smmpi.aws.facts import check_job_name
from smmpi.errors import BadInput
from smmpi.serve import described
from smmpi.serve.errors import ApiError, not_found
from smmpi.serve.job_records import (
    Summary,
    checked_record,
    job_arn,
    job_key,
    name_taken,
    set_aside,
    shown,
    summary_of,
)
from smmpi.serve.state import read_json, subfolder, write_json

TERMINAL = ("Completed", "Failed", "Stopped")
ANSWERS_KEPT = 16  # DescribeTrainingJob bodies of ended jobs kept built (the last asked for)

#: SageMaker's words for each secondary status (DescribeTrainingJob's StatusMessage).
MESSAGES = {
    "Starting": "Preparing the instances for training",
    "Downloading": "Downloading input data",
    "Training": "Training image download completed. Training in progress.",
    "Uploading": "Uploading generated training model",
    "Completed": "Training job completed",
    "Failed": "Training job failed",
    "Stopping": "Stopping the training job",
    "Stopped": "Training job stopped",
    "MaxRuntimeExceeded": "Training job runtime exceeded MaxRuntimeInSeconds provided",
}

#: What ListTrainingJobs shows of a job (all that memory keeps of an ended one).
SUMMARY = (
    "TrainingJobName", "TrainingJobArn", "CreationTime", "TrainingEndTime",
    "LastModifiedTime", "TrainingJobStatus", "SecondaryStatus", "WarmPoolStatus",
)  # fmt: skip

#: The request's fields DescribeTrainingJob echoes back.
ECHOED = (
    "HyperParameters", "AlgorithmSpecification", "RoleArn", "InputDataConfig",
    "OutputDataConfig", "ResourceConfig", "VpcConfig", "StoppingCondition",
    "EnableNetworkIsolation", "EnableInterContainerTrafficEncryption",
    "EnableManagedSpotTraining", "CheckpointConfig", "DebugHookConfig",
    "DebugRuleConfigurations", "TensorBoardOutputConfig", "ProfilerConfig",
    "Environment", "RetryStrategy", "ExperimentConfig", "RemoteDebugConfig",
    "InfraCheckConfig", "SessionChainingConfig",
)  # fmt: skip


class JobStore:
    """Every job serve knows, in memory and under ``folder``; all access under one lock."""

    def __init__(self, root: Path) -> None:
        self.folder = subfolder(root, "jobs")
        self.lock = threading.RLock()
        self.live: dict[str, dict[str, Any]] = {}  # lower-case name -> record (not ended)
        self.summaries: dict[str, Summary] = {}  # lower-case name -> summary (every job)
        self._answers: dict[str, bytes] = {}  # lower-case name -> DescribeTrainingJob's body
        self.set_aside: list[str] = []  # one line for each file that was no job's record
        for path in sorted(self.folder.glob("*.json")):
            try:
                self._keep(checked_record(read_json(path), path))
            except (OSError, ValueError, KeyError, TypeError) as err:
                self.set_aside.append(set_aside(path, err))

    def _keep(self, record: dict[str, Any]) -> None:
        summary = summary_of(record)
        key = job_key(summary[0])
        self.summaries[key] = summary
        if record["TrainingJobStatus"] in TERMINAL:
            self.live.pop(key, None)
        else:
            self.live[key] = record

    def _save(self, record: dict[str, Any]) -> None:
        self._answers.pop(str(record["TrainingJobName"]).lower(), None)
        write_json(self.folder / f"{record['TrainingJobName']}.json", record)
        self._keep(record)

    def create(self, request: dict[str, Any], region: str) -> dict[str, Any]:
        name = str(request["TrainingJobName"])
        try:
            check_job_name(name)
        except BadInput as err:
            raise ApiError("ValidationException", str(err)) from None
        now = time.time()
        record: dict[str, Any] = {
            "TrainingJobName": name,
            "TrainingJobArn": job_arn(region, name),
            "TrainingJobStatus": "InProgress",
            "SecondaryStatus": "Starting",
            "CreationTime": now,
            "LastModifiedTime": now,
            "SecondaryStatusTransitions": [
                {"Status": "Starting", "StartTime": now, "StatusMessage": MESSAGES["Starting"]}
            ],
            **{k: copy.deepcopy(request[k]) for k in ECHOED if k in request},
            "_Region": region,
            "_Tags": list(request.get("Tags") or []),
        }
        with self.lock:
            taken = self.summaries.get(name.lower())
            if taken is not None:
                raise ApiError("ResourceInUse", name_taken(record, taken))
            self._save(record)
        return record

    def _summary_in(self, key: str, region: str | None) -> Summary:
        """The job's summary; not found if there is none, or it is another region's job."""
        summary = self.summaries.get(key)
        if summary is None or (region is not None and summary[1] != region):
            raise not_found()
        return summary

    def get(self, name: object, region: str | None = None) -> dict[str, Any]:
        """The job's record: the one in memory while it runs, else a fresh copy from its file.
        With ``region``, only that region's job (a region sees only its own jobs)."""
        key = str(name).lower()
        with self.lock:
            summary = self._summary_in(key, region)
            record = self.live.get(key)
            if record is not None:
                return record
            found: dict[str, Any] = read_json(self.folder / f"{summary[0]}.json")
            return found

    def by_arn(self, arn: object, region: str | None = None) -> dict[str, Any]:
        """The job an ARN names; with ``region``, only if the ARN is that region's."""
        parts = str(arn).split(":")
        if len(parts) != 6 or not parts[5].startswith("training-job/"):
            raise not_found()
        if region is not None and parts[3] != region:
            raise not_found()
        return self.get(parts[5].rsplit("/", 1)[-1], region)

    def describe_body(self, name: object, region: str | None = None) -> bytes:
        """DescribeTrainingJob's JSON body, built once per change of the job (every change
        goes through ``_save``, which drops it), so a poller costs no copy nor encoding.
        Every running job's body is kept; of ended jobs, the last ``ANSWERS_KEPT`` asked for."""
        key = str(name).lower()
        with self.lock:
            self._summary_in(key, region)
            body = self._answers.pop(key, None)
            if body is None:
                record = self.get(name)
                body = json.dumps(described.shown(record), default=str).encode()
            self._answers[key] = body  # the last asked for is the last to go
            if len(self._answers) > len(self.live) + ANSWERS_KEPT:
                ended = next((k for k in self._answers if k not in self.live), None)
                self._answers.pop(ended or next(iter(self._answers)))
            return body

    def update(self, name: str, **fields: Any) -> dict[str, Any]:
        with self.lock:
            record = self.get(name)
            record.update(fields, LastModifiedTime=time.time())
            self._save(record)
            return record

    def show(self, name: str, **fields: Any) -> None:
        """Show ``fields`` in a running job's DescribeTrainingJob at once; they are written
        with the job's next change (a job's end is one)."""
        with self.lock:
            key = name.lower()
            record = self.live.get(key)
            if record is not None:
                record.update(fields)
                self._answers.pop(key, None)

    def transition(self, name: str, status: str, message: str | None = None, **fields: Any) -> None:
        """Move the job to secondary ``status``, ending the transition it was in."""
        with self.lock:
            record = self.get(name)
            now = time.time()
            transitions = record["SecondaryStatusTransitions"]
            if transitions and "EndTime" not in transitions[-1]:
                transitions[-1]["EndTime"] = now
            entry = {
                "Status": status,
                "StartTime": now,
                "StatusMessage": message or MESSAGES[status],
            }
            if status in TERMINAL or status in ("MaxRuntimeExceeded",):
                entry["EndTime"] = now
            transitions.append(entry)
            record.update(fields, SecondaryStatus=status, LastModifiedTime=now)
            self._save(record)

    def tags(self, arn: object, region: str | None = None) -> list[dict[str, str]]:
        with self.lock:
            return list(self.by_arn(arn, region)["_Tags"])

    def set_tags(self, arn: object, tags: list[dict[str, str]], region: str | None = None) -> None:
        with self.lock:
            record = self.by_arn(arn, region)
            record["_Tags"] = tags
            self._save(record)

    def snapshot(self, region: str | None = None) -> list[dict[str, Any]]:
        """Every job's summary (``SUMMARY``'s fields); with ``region``, that region's jobs."""
        with self.lock:
            summaries = list(self.summaries.values())
        return [shown(s) for s in summaries if region is None or s[1] == region]
