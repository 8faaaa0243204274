"""What a local job reads before it starts: its code and its input channels.

Both come as SageMaker would fetch them: the ``sourcedir.tar.gz`` named by
``sagemaker_submit_directory``, and each channel's ``s3://`` prefix or
``file://`` path, copied into every host's ``input/data/<channel>``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

from smmpi.aws.clients import clients, split_s3
from smmpi.aws.errors import aws_errors
from smmpi.bounded import (
    CHANNEL_MAX_BYTES,
    CODE_MAX_BYTES,
    copy_regular,
    read_regular,
    regular_tree,
)
from smmpi.errors import BadInput
from smmpi.toolkit.request import decode_hyperparameters

if TYPE_CHECKING:
    from smmpi.aws.types import S3Client


def fetch_source(
    request: Mapping[str, Any], s3: S3Client | None = None, region: str | None = None
) -> bytes:
    """The ``sourcedir.tar.gz`` named by ``sagemaker_submit_directory`` (s3:// or file://)."""
    uri = str(decode_hyperparameters(request).get("sagemaker_submit_directory", ""))
    if uri.startswith("s3://"):
        bucket, key = split_s3(uri)
        with aws_errors():
            body = (s3 or clients("s3", region=region)[0]).get_object(Bucket=bucket, Key=key)
            body = body["Body"]
            data: bytes = body.read()
        return data
    if uri.startswith("file://"):
        return read_regular(urlparse(uri).path, "sagemaker_submit_directory", CODE_MAX_BYTES)
    raise BadInput("sagemaker_submit_directory", uri, "an s3:// or file:// sourcedir.tar.gz")


def local_source(channel: Mapping[str, Any]) -> Path | None:
    """The file or folder of this machine a ``file://`` channel reads (None: not one)."""
    source = channel.get("DataSource", {})
    uri = source.get("S3DataSource", {}).get("S3Uri", "")
    if "FileDataSource" in source or uri.startswith("file://"):
        return Path(urlparse(uri or source["FileDataSource"]["FileUri"]).path)
    return None


def channel_files(channel: Mapping[str, Any]) -> list[tuple[Path, str]]:
    """Every file a local channel copies, each checked (:func:`~smmpi.bounded.regular_tree`:
    regular files under the channel's cap, nothing of /proc, /sys or /dev); else one line."""
    src = local_source(channel)
    field = f"InputDataConfig.{channel.get('ChannelName')}"
    if src is None:
        return []
    if not src.exists():
        raise BadInput(field, str(src), "an existing local file or folder")
    return regular_tree(src, field, CHANNEL_MAX_BYTES)


def check_channels(request: Mapping[str, Any], channels: Mapping[str, Path] | None = None) -> None:
    """Every local channel of ``request`` (and ``channels``' folders) checked before a job's
    folder exists: a file no job may read is bad input, and nothing is created."""
    for spec in request.get("InputDataConfig") or []:
        name = str(spec.get("ChannelName"))
        if channels and name in channels:
            spec = {"ChannelName": name, "DataSource": {"FileDataSource": {}}}
            spec["DataSource"]["FileDataSource"]["FileUri"] = Path(channels[name]).as_uri()
        channel_files(spec)


def copy_channel(channel: dict[str, Any], dest: Path, region: str | None) -> None:
    source = channel.get("DataSource", {})
    uri = source.get("S3DataSource", {}).get("S3Uri", "")
    if local_source(channel) is not None:
        field = f"InputDataConfig.{channel.get('ChannelName')}"
        for path, name in channel_files(channel):
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            copy_regular(path, dest / name, field, CHANNEL_MAX_BYTES)
        return
    if not uri.startswith("s3://"):
        raise BadInput(
            f"InputDataConfig.{channel.get('ChannelName')}", uri, "an s3:// or file:// data source"
        )
    bucket, prefix = split_s3(uri)
    (s3,) = clients("s3", region=region)
    with aws_errors():
        keys = [
            str(obj["Key"])
            for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
            for obj in page.get("Contents", [])
        ]
        targets = [(key, _inside(dest, key, prefix, channel)) for key in keys]  # all, first
        for key, target in targets:
            target.parent.mkdir(parents=True, exist_ok=True)
            s3.download_file(bucket, key, str(target))


def _inside(dest: Path, key: str, prefix: str, channel: Mapping[str, Any]) -> Path:
    """Where an object of the channel lands: under ``dest``, never outside through ``..``."""
    rel = key[len(prefix) :].lstrip("/") or PurePosixPath(key).name
    if ".." in PurePosixPath(rel).parts or not rel:
        raise BadInput(
            f"InputDataConfig.{channel.get('ChannelName')}",
            key,
            "S3 keys that stay inside the channel's folder (no '..' in their path)",
        )
    return dest / rel
