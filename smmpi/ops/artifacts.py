"""A job's artifacts: the model and output archives SageMaker wrote, fetched and extracted."""

from __future__ import annotations

import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from smmpi.archives import extract
from smmpi.aws.clients import split_s3
from smmpi.aws.errors import MISSING_KEY, aws_errors, error_code
from smmpi.errors import SmmpiError
from smmpi.ops.status import describe

if TYPE_CHECKING:
    from smmpi.aws.types import S3Client, SageMakerClient


def artifact_uris(d: Mapping[str, Any]) -> dict[str, str]:
    """Where SageMaker puts the job's archives: ``model`` and ``output``."""
    name = d["TrainingJobName"]
    base = str(d.get("OutputDataConfig", {}).get("S3OutputPath", "")).rstrip("/")
    model = d.get("ModelArtifacts", {}).get("S3ModelArtifacts") or (
        f"{base}/{name}/output/model.tar.gz" if base else ""
    )
    out: dict[str, str] = {}
    if model:
        out["model"] = model
        out["output"] = model.rsplit("/", 1)[0] + "/output.tar.gz"
    elif base:
        out["output"] = f"{base}/{name}/output/output.tar.gz"
    return out


@dataclass(frozen=True)
class Fetched:
    kind: str
    uri: str
    directory: Path | None  # None: no archive at uri
    files: tuple[Path, ...]


def fetch(
    sm: SageMakerClient, s3: S3Client, name: str, to: Path, region: str | None = None
) -> list[Fetched]:
    """Download the model and output archives and extract them to ``to/model``, ``to/output``.

    Missing archives are reported, not fatal: a failed job often has output
    but no model. Having neither is an error, and then ``to`` is not created:
    archives are downloaded to a temporary folder and only extracted into
    ``to`` once they are here.
    """
    d = describe(sm, name, region)
    results: list[Fetched] = []
    with tempfile.TemporaryDirectory(prefix="smmpi-fetch-") as tmp:
        for kind, uri in artifact_uris(d).items():
            bucket, key = split_s3(uri)
            archive = Path(tmp) / f"{kind}.tar.gz"
            with aws_errors():
                try:
                    s3.download_file(bucket, key, str(archive))
                except Exception as err:  # botocore raises ClientError 404 for a missing key
                    if error_code(err) in MISSING_KEY:
                        results.append(Fetched(kind, uri, None, ()))
                        continue
                    raise
            files = extract(archive, to / kind, links=True)  # links inside, kept as links
            results.append(Fetched(kind, uri, to / kind, tuple(files)))
    if not any(r.directory for r in results):
        state = d["TrainingJobStatus"]
        raise SmmpiError(
            f"{name} ({state}) has no model or output archive at "
            + ", ".join(r.uri for r in results)
        )
    return results
