"""Facts of the SageMaker API: its name patterns and limits, the tag smmpi puts on its jobs.

Everything here is data or a pure function of data; botocore's service model
is read (not imported) for the instance types SageMaker trains on.
"""

from __future__ import annotations

import functools
import gzip
import importlib.util
import json
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from smmpi.errors import BadInput

# Jobs smmpi creates carry this tag (value "true"), so `smmpi jobs` can list them.
SMMPI_TAG_KEY = "smmpi:managed"
SMMPI_TAG_VALUE = "true"
SMMPI_TAG = (SMMPI_TAG_KEY, SMMPI_TAG_VALUE)

# DescribeTrainingJob's TrainingJobStatus values after which nothing changes.
TERMINAL = frozenset({"Completed", "Failed", "Stopped"})

#: MaxRuntimeInSeconds' range: botocore's model says at least 1, its documentation at most
#: 28 days (tests pin both to the installed botocore).
MAX_RUN_MIN = 1
MAX_RUN_LIMIT = 28 * 24 * 3600
#: The range in words, for every field held to it.
MAX_RUN_RULE = f"whole seconds from {MAX_RUN_MIN} to {MAX_RUN_LIMIT} (28 days, SageMaker's limit)"
KEEP_ALIVE_LIMIT = 3600  # warm pools keep instances at most one hour
MAX_ENV = 100
# The date suffix the SDK appends to a base job name: -YYYY-mm-dd-HH-MM-SS-mmm.
JOB_NAME_SUFFIX_LEN = 24

# SageMaker API patterns (botocore's sagemaker service model).
JOB_NAME_RE = re.compile(r"^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$")
#: SageMaker's own rule for training job names, in words.
JOB_NAME_RULE = "1-63 letters, digits and hyphens, starting and ending with a letter or digit"
ROLE_ARN_RE = re.compile(r"^arn:aws[a-z\-]*:iam::\d{12}:role/?[a-zA-Z_0-9+=,.@\-_/]+$")
ENV_KEY_RE = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")
BUCKET_RE = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")
REGION_RE = re.compile(r"^[a-z]{2}(-[a-z]+)+-\d+$")
INSTANCE_TYPE_RE = re.compile(r"^ml\.[a-z0-9-]+\.[a-z0-9]+$")
SUBNET_RE = re.compile(r"^subnet-[0-9a-f]+$")
SECURITY_GROUP_RE = re.compile(r"^sg-[0-9a-f]+$")
TAG_RE = re.compile(r"^[\w.:/=+\-@ ]*$")
# CreateTrainingJob's Channel.ChannelName pattern and length.
CHANNEL_RE = re.compile(r"^[A-Za-z0-9\.\-_]+$")
CHANNEL_MAX = 64
S3_URI_RE = re.compile(r"s3://[a-z0-9][a-z0-9.-]{1,61}[a-z0-9](/.*)?")

# The user's messages for these patterns.
ROLE_RULE = "an IAM role ARN like arn:aws:iam::123456789012:role/NAME"
BUCKET_RULE = "an S3 bucket name (3-63 of a-z 0-9 . -)"
REGION_RULE = "an AWS region name like us-west-2"


@functools.lru_cache(maxsize=1)
def shared_loader() -> Any:
    """One botocore data loader per process: the SageMaker API model parses once (~0.1 s)."""
    from botocore.loaders import create_loader

    return create_loader()


def _bundled_model_file(service: str) -> Path | None:
    """botocore's own ``service-2`` file of ``service``, where nothing can replace it.

    botocore's loader prefers ``~/.aws/models`` and ``AWS_DATA_PATH`` and merges
    ``*.sdk-extras.json``; where any of those exists, None (the loader is asked instead).
    """
    if os.environ.get("AWS_DATA_PATH") or Path("~/.aws/models").expanduser().exists():
        return None
    spec = importlib.util.find_spec("botocore")  # finds the package without importing it
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(next(iter(spec.submodule_search_locations)), "data", service)
    versions = sorted(p for p in folder.glob("*") if p.is_dir()) if folder.is_dir() else []
    if not versions or any(versions[-1].glob("service-2.sdk-extras.json*")):
        return None
    for name in ("service-2.json", "service-2.json.gz"):
        if (versions[-1] / name).is_file():
            return versions[-1] / name
    return None


@functools.lru_cache(maxsize=4)
def service_model(service: str) -> dict[str, Any]:
    """botocore's service model of ``service``, as its loader gives it.

    Read straight from botocore's data where that is the file the loader would read:
    importing botocore costs a command line more (0.2-0.4 s) than the model does.
    """
    path = _bundled_model_file(service)
    if path is None:
        model: dict[str, Any] = shared_loader().load_service_model(service, "service-2")
        return model
    raw = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    loaded: dict[str, Any] = json.loads(raw)
    return loaded


@functools.lru_cache(maxsize=1)
def known_instance_types() -> frozenset[str] | None:
    """SageMaker's TrainingInstanceType enum from botocore's model, or None without botocore."""
    try:
        model = service_model("sagemaker")
    except ImportError:
        return None
    return frozenset(model["shapes"]["TrainingInstanceType"]["enum"])


def vcpus(instance_type: str) -> int | None:
    """vCPUs of an instance size by EC2's naming rule (large=2, xlarge=4, Nxlarge=4N)."""
    size = instance_type.rsplit(".", 1)[-1]
    if size == "medium":
        return 1
    if size == "large":
        return 2
    m = re.fullmatch(r"(\d*)xlarge", size)
    if m:
        return 4 * int(m.group(1) or 1)
    return None


def is_smmpi_job(tags: Iterable[Mapping[str, object]]) -> bool:
    """True when ``tags`` (ListTags' answer) carry smmpi's tag."""
    key, value = SMMPI_TAG
    return any(t.get("Key") == key and t.get("Value") == value for t in tags)


def check_job_name(name: str) -> str:
    """Refuse a name SageMaker would refuse, before any call."""
    if not JOB_NAME_RE.match(name):
        raise BadInput("job name", name, JOB_NAME_RULE)
    return name


@functools.lru_cache(maxsize=1)
def known_regions() -> frozenset[str]:
    """Every region of every partition in botocore's endpoint data (empty without botocore)."""
    try:
        data = shared_loader().load_data("endpoints")
    except ImportError:
        return frozenset()
    return frozenset(r for p in data.get("partitions", []) for r in p.get("regions", {}))


def check_known_region(region: str, source: str = "") -> str:
    """A well-formed region name that botocore knows, else one line naming where it came from."""
    if not REGION_RE.match(region):
        raise BadInput("region" + source, region, REGION_RULE)
    known = known_regions()
    if known and region not in known:
        raise BadInput(
            "region" + source,
            region,
            f"one of the {len(known)} regions AWS's SDK knows "
            "(e.g. us-east-1, us-west-2, eu-west-1)",
        )
    return region
