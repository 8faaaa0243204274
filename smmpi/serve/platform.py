"""What SageMaker does outside the container, for one job: check, download, upload, explain.

- ``unsupported``: what cannot run here yet (Pipe and FastFile input, a
  heterogeneous cluster, an image that is not a TensorFlow or PyTorch
  training image, manifests, sharding across several instances); the job
  fails at once with this line as its FailureReason.
- ``download``: the code (``sagemaker_submit_directory``) and each channel's
  S3 prefix, from serve's S3, into the job's work folder; the request the
  local runner gets names those folders (``file://``) instead of S3.
- ``upload``: ``model.tar.gz`` and ``output.tar.gz`` to ``S3OutputPath/JOB/output/``.

A failed job's FailureReason is :func:`smmpi.platform.failure_reason.reason`, the
same text a local job records.
"""

from __future__ import annotations

import copy
import os
import re
from pathlib import Path
from typing import Any

from smmpi.archives import tar_dirs
from smmpi.serve.s3store import S3Store
from smmpi.toolkit.driver_world import DRIVERS, REMOTE_FUNCTION
from smmpi.toolkit.request import decode_hyperparameters, hosts
from smmpi.trees import entries

_IMAGE_RE = re.compile(r"/(tensorflow|pytorch)-training:")


def _split(uri: str) -> tuple[str, str]:
    if not uri.startswith("s3://"):
        raise ValueError(f"not an S3 URI: {uri[:200]}")
    bucket, _, key = uri[5:].partition("/")
    return bucket, key


OWN_START = (
    "ClientError: smmpi serve runs a ContainerEntrypoint of ModelTrainer's (its sm_drivers "
    "channel) or of @remote's (its sagemaker_remote_function_bootstrap channel) only"
)


def unsupported(request: dict[str, Any]) -> str | None:
    """Why this request cannot run here, in one line; None if it can."""
    algo = request.get("AlgorithmSpecification") or {}
    resources = request.get("ResourceConfig") or {}
    if algo.get("TrainingInputMode", "File") != "File":
        return f"smmpi serve runs File input mode only, not {algo['TrainingInputMode']}"
    if resources.get("InstanceGroups"):
        return "smmpi serve does not run heterogeneous clusters (ResourceConfig.InstanceGroups) yet"
    image = str(algo.get("TrainingImage") or "")
    if not _IMAGE_RE.search(image):
        return (
            f"smmpi serve emulates the TensorFlow and PyTorch training images only, "
            f"not {image[:200] or 'an algorithm'}"
        )
    if algo.get("ContainerEntrypoint") and not any(
        _has_channel(request, name) for name in (DRIVERS, REMOTE_FUNCTION)
    ):
        return OWN_START
    source = str(decode_hyperparameters(request).get("sagemaker_submit_directory") or "")
    # a request with its own container start (ModelTrainer's) has its code in a channel
    if not source.startswith("s3://") and not algo.get("ContainerEntrypoint"):
        return "ClientError: sagemaker_submit_directory must name an s3:// sourcedir.tar.gz"
    for channel in request.get("InputDataConfig") or []:
        why = _channel_problem(channel, int(resources.get("InstanceCount", 1)))
        if why:
            return why
    return None


def _has_channel(request: dict[str, Any], name: str) -> bool:
    return any(c.get("ChannelName") == name for c in request.get("InputDataConfig") or [])


def _channel_problem(channel: dict[str, Any], instances: int) -> str | None:
    name = channel.get("ChannelName")
    if channel.get("InputMode", "File") != "File":
        return f"channel {name}: smmpi serve runs File input mode only, not {channel['InputMode']}"
    s3 = (channel.get("DataSource") or {}).get("S3DataSource")
    if s3 is None:
        return f"channel {name}: smmpi serve reads S3 data sources only"
    if s3.get("S3DataType", "S3Prefix") != "S3Prefix":
        return f"channel {name}: smmpi serve reads S3Prefix data only, not {s3['S3DataType']}"
    return None


def _inside(root: Path, relative: str) -> Path:
    target = (root / relative).resolve()
    if target == root.resolve() or root.resolve() not in target.parents:
        raise ValueError(f"S3 key {relative[:200]!r} would land outside its channel")
    return target


def download(request: dict[str, Any], s3: S3Store, work: Path) -> tuple[dict[str, Any], bytes]:
    """The request with channels read from ``work``, and the code's bytes (KeyError, ValueError)."""
    source_uri = decode_hyperparameters(request).get("sagemaker_submit_directory")
    source = s3.get(*_split(str(source_uri))) if source_uri else b""  # ModelTrainer: a channel
    local = copy.deepcopy(request)
    instances = len(hosts(request))
    for channel in local.get("InputDataConfig") or []:
        spec = channel["DataSource"]["S3DataSource"]
        root = work / "channels" / channel["ChannelName"]
        if spec.get("S3DataDistributionType") == "ShardedByS3Key" and instances > 1:
            # every host's share goes under shards/HOST/CHANNEL; the runner copies none
            _fetch_prefix(s3, spec["S3Uri"], work / "shards", instances, channel["ChannelName"])
            root.mkdir(parents=True, mode=0o700)
        else:
            _fetch_prefix(s3, spec["S3Uri"], root)
        spec["S3Uri"] = root.as_uri()
    checkpoints = (request.get("CheckpointConfig") or {}).get("S3Uri")
    if checkpoints:
        _fetch_prefix(s3, str(checkpoints), work / "checkpoints")
    return local, source


def _fetch_prefix(s3: S3Store, uri: str, root: Path, shards: int = 0, channel: str = "") -> None:
    """Every object under ``uri`` into ``root``, by its key after the prefix.

    With ``shards`` (ShardedByS3Key), the i-th key in key order goes to host
    ``algo-(i % shards + 1)``, under ``root/algo-k/channel``: each instance gets its share.
    """
    bucket, prefix = _split(uri)
    root.mkdir(parents=True, mode=0o700, exist_ok=bool(shards))
    for index, key in enumerate(s3.keys(bucket, prefix)):
        relative = key[len(prefix) :].lstrip("/") or Path(key).name
        base = root / f"algo-{index % shards + 1}" / channel if shards else root
        base.mkdir(parents=True, exist_ok=True)
        target = _inside(base, relative)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(s3.get(bucket, key))


def upload_checkpoints(
    request: dict[str, Any], hosts_dir: Path, s3: S3Store, restored: Path
) -> int:
    """What changed in each host's ``/opt/ml/checkpoints`` to CheckpointConfig's S3Uri.

    As SageMaker's sync does, a file left as it was restored is not uploaded again (so
    another host's untouched copy never overwrites a newer one); returns the files uploaded.
    """
    uri = (request.get("CheckpointConfig") or {}).get("S3Uri")
    if not uri or not hosts_dir.is_dir():
        return 0
    bucket, prefix = _split(str(uri))
    count = 0
    for host in hosts(request):
        for entry in entries(hosts_dir, hosts_dir / host / "opt" / "ml" / "checkpoints"):
            fd = entry.open() if entry.is_file else None
            if fd is None:
                continue
            with os.fdopen(fd, "rb") as f:
                data = f.read()
            before = restored / entry.name
            if before.is_file() and not before.is_symlink() and before.read_bytes() == data:
                continue
            key = f"{prefix.rstrip('/')}/{entry.name}".lstrip("/")
            s3.put(bucket, key, data)
            count += 1
    return count


def upload(request: dict[str, Any], name: str, hosts_dir: Path, s3: S3Store, work: Path) -> str:
    """Pack the hosts' model and output folders, put them under S3OutputPath; the model's URI.

    A folder that is a link out of its instance is :class:`~smmpi.trees.TreeRefused`."""
    output = str((request.get("OutputDataConfig") or {}).get("S3OutputPath") or "")
    bucket, prefix = _split(output)
    upload_checkpoints(request, hosts_dir, s3, work / "checkpoints")
    ml = [hosts_dir / host / "opt" / "ml" for host in hosts(request)] if hosts_dir.is_dir() else []
    base = f"{prefix.rstrip('/')}/{name}/output/".lstrip("/")
    for folder, archive in (("model", "model.tar.gz"), ("output", "output.tar.gz")):
        path = work / archive
        tar_dirs([m / folder for m in ml], path, below=hosts_dir)
        s3.put(bucket, base + archive, path.read_bytes())
    return f"s3://{bucket}/{base}model.tar.gz"
