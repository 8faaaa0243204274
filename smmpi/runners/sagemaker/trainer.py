"""``submit --api model-trainer``: the request ModelTrainer builds, submitted.

ModelTrainer's own ``train`` builds the request, as for a dry run
(:func:`smmpi.sdk.model_trainer.capture`), but with the settings resolved online (the
role, and the bucket: the SDK's default ``sagemaker-REGION-ACCOUNT`` from STS through the
configured endpoint). The SDK itself stays offline, so building creates nothing. Then the
same steps as the estimator path (:class:`~smmpi.runners.sagemaker.submit.SageMakerRunner`):
the name must be free and the buckets exist, every file of the channels ModelTrainer
uploads (``code`` and ``sm_drivers``) goes to the key the request names, written only if
nothing is there, then the CreateTrainingJob call ``train`` makes, with its very
parameters. The job carries smmpi's tag, so ``status``, ``jobs``, ``logs``, ``stop`` and
``fetch`` work on it as on any other.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from smmpi.aws.clients import split_s3
from smmpi.aws.errors import error_line
from smmpi.errors import SmmpiError
from smmpi.runners.base import Progress, RunOptions, silent
from smmpi.runners.sagemaker.job import Submission, SubmitFailed
from smmpi.runners.sagemaker.submit import Upload, runner_for, warn_if_big
from smmpi.sdk import model_trainer
from smmpi.sdk.session import boto_session
from smmpi.sdk.settings import account_and_bucket, resolve_settings
from smmpi.spec import MPIJob, require_s3_inputs
from smmpi.spec.checks import check_api

if TYPE_CHECKING:
    from smmpi.aws.types import Request


def channel_uploads(request: Mapping[str, Any], channels: Mapping[str, Path]) -> list[Upload]:
    """Each file of each channel the SDK uploads, at the key the SDK's ``upload_data`` gives
    it: the channel's S3 URI (the request's ``InputDataConfig``) / its path in the folder."""
    uris = {
        str(c["ChannelName"]): str(c["DataSource"]["S3DataSource"]["S3Uri"])
        for c in request.get("InputDataConfig") or []
        if "S3DataSource" in (c.get("DataSource") or {})
    }
    uploads: list[Upload] = []
    for name, folder in sorted(channels.items()):
        if name not in uris:
            raise SmmpiError(f"ModelTrainer uploaded channel {name!r} but its request omits it")
        bucket, prefix = split_s3(uris[name].rstrip("/"))
        for path in sorted(p for p in Path(folder).rglob("*") if p.is_file()):
            relative = path.relative_to(folder).as_posix()
            uploads.append(
                Upload(
                    bucket,
                    f"{prefix}/{relative}",
                    path.read_bytes(),
                    what=f"the {name} channel's {relative}",
                    prefix=uris[name].rstrip("/"),
                )
            )
    if not uploads:
        raise SmmpiError("ModelTrainer uploaded no code and no sm_drivers channel")
    code = [u for u in uploads if u.prefix == uris.get("code", "").rstrip("/")]
    return code + [u for u in uploads if u not in code]  # the code channel first: code_uri


def submit_trainer(
    job: MPIJob,
    *,
    wait: bool = True,
    echo: Progress | None = None,
    poll: float | None = None,
    on_log: Callable[[str], None] | None = None,
    stop_on_interrupt: bool = False,
    create_bucket: bool = False,
    job_name: str | None = None,
) -> Submission:
    """Build the request through ModelTrainer, upload its channels, create the job, and follow
    it if ``wait`` (the arguments are :func:`smmpi.runners.sagemaker.submit.submit`'s)."""
    from botocore.exceptions import BotoCoreError, ClientError

    say = echo or silent
    check_api(job.api, job_name)  # ModelTrainer names each job itself: BASE-TIMESTAMP
    require_s3_inputs(job)
    settings = resolve_settings(job, offline=False)
    boto = boto_session(settings, offline=False)
    try:
        settings = account_and_bucket(settings, boto)
    except (ClientError, BotoCoreError) as err:
        raise SubmitFailed(f"resolving the account: {error_line(err)}") from None
    with tempfile.TemporaryDirectory(prefix="smmpi-mt-") as tmp:
        captured = model_trainer.capture(job, Path(tmp), settings)
        request = cast("Request", captured.request)
        uploads = channel_uploads(request, captured.channels)
    warn_if_big(job, say)
    # ModelTrainer names the job BASE-TIMESTAMP, to the second
    retry = "submit again in a second, or pick another --base-job-name"
    runner = runner_for(
        job, boto.client("sagemaker"), boto, wait, poll, on_log, stop_on_interrupt,
        create_bucket, retry,
    )  # fmt: skip
    options = RunOptions(region=settings.region, progress=say)
    world = (job.ppn, job.world_size)
    # the notes say what smmpi did to the driver's line, and why
    return runner.run_uploads(request, uploads, options, world, captured.notes)
