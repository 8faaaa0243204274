"""boto3 sessions and clients, the region they use, and S3 URIs.

``AWS_ENDPOINT_URL`` (and the per-service ``AWS_ENDPOINT_URL_<SERVICE>``) is
read by boto3 itself, so a moto server or a private endpoint works with no
code here. Sessions share one botocore data loader, so the SageMaker API
model is parsed once per process.
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from smmpi import config
from smmpi.aws.environment import check_environment
from smmpi.aws.errors import NotConfigured
from smmpi.aws.facts import check_known_region, shared_loader
from smmpi.errors import SmmpiError

if TYPE_CHECKING:
    import boto3

_DRY_RUN_KEY = "smmpi-dry-run"  # dummy credentials of an offline session: never sent anywhere


def configured_region(flag: str | None = None) -> str | None:
    """The region smmpi was told: flag, ``SMMPI_REGION``, then the config file."""
    return config.setting("region", flag)


def aws_region() -> str | None:
    """AWS's own region: ``AWS_REGION``, ``AWS_DEFAULT_REGION``, then the profile's.

    botocore's own chain ends at the instance metadata service, a network
    call a dry run must not make; only variables and files are read here.
    """
    return _aws_region()[0]


def _aws_region() -> tuple[str | None, str]:
    """AWS's own region and where it came from (for a one-line refusal)."""
    for var in ("AWS_REGION", "AWS_DEFAULT_REGION"):
        if os.environ.get(var):
            return os.environ[var], f" (from {var})"
    check_environment()
    if not any(os.path.isfile(path) for path in _profile_files()):
        return None, ""  # no profile to read: botocore would find none (and cost ~0.1 s)
    try:
        import botocore.session

        region = botocore.session.Session().get_scoped_config().get("region")
    except Exception:  # no botocore, or a broken profile: a dry run still works
        return None, ""
    return (str(region), " (from the AWS profile)") if region else (None, "")


def _profile_files() -> tuple[str, ...]:
    """The files a profile's region comes from: botocore reads the config file and adds
    the profiles of the credentials file to it."""
    files = (
        ("AWS_CONFIG_FILE", "~/.aws/config"),
        ("AWS_SHARED_CREDENTIALS_FILE", "~/.aws/credentials"),
    )
    return tuple(os.path.expanduser(os.environ.get(var) or default) for var, default in files)


def resolve_region(flag: str | None = None) -> str | None:
    """Region by smmpi's precedence: flag, SMMPI_REGION, config file, then AWS's own.

    A value that is not a region name (``a/b``), or a region botocore does not
    know (``xx-fake-9``), is one line naming where it came from, not an
    endpoint's error page or botocore's traceback.
    """
    region: str | None
    if flag:
        region, source = flag, ""
    elif os.environ.get("SMMPI_REGION"):
        region, source = os.environ["SMMPI_REGION"], " (from SMMPI_REGION)"
    else:
        region, source = configured_region(), f" (from {config.path()})"
        if not region:
            region, source = _aws_region()
    if region is not None:
        check_known_region(region, source)
    return region


def botocore_session() -> Any:
    """A botocore session sharing smmpi's data loader (unless AWS_DATA_PATH customises it)."""
    import botocore.session

    check_environment()
    session = botocore.session.Session()
    if not os.environ.get("AWS_DATA_PATH"):
        session.register_component("data_loader", shared_loader())
    return session


def session(region: str | None) -> boto3.Session:
    """A boto3 session in ``region`` on the default credential chain."""
    import boto3

    return boto3.Session(region_name=region, botocore_session=botocore_session())


@functools.lru_cache(maxsize=8)
def offline_session(region: str) -> boto3.Session:
    """Dummy keys and a hook that refuses every HTTP request (one per region and process)."""
    import boto3

    offline = boto3.Session(
        region_name=region,
        aws_access_key_id=_DRY_RUN_KEY,
        aws_secret_access_key=_DRY_RUN_KEY,
        botocore_session=botocore_session(),
    )
    offline.events.register("before-send", _refuse_http)
    return offline


def _refuse_http(request: Any, **kwargs: Any) -> None:
    raise SmmpiError(
        f"a dry run must not reach the network (attempted {request.method} "
        f"{request.url.split('?')[0]})"
    )


def clients(*services: str, region: str | None = None) -> tuple[Any, ...]:
    """boto3 clients for ``services``, in one session, in the resolved region."""
    chosen = session(resolve_region(region))
    if chosen.region_name is None:
        raise NotConfigured(
            "no AWS region: pass --region, set SMMPI_REGION or AWS_REGION, "
            "or run `smmpi infra deploy --region R`"
        )
    return tuple(chosen.client(s) for s in services)  # type: ignore[call-overload]


@contextlib.contextmanager
def no_metadata_lookups() -> Iterator[None]:
    """Keep botocore's credential chain off the instance metadata service for a while.

    The SDK builds throwaway clients on the default credential chain (a
    JumpStart session at import, a TensorBoard helper in every estimator).
    They are never called, but resolving their credentials without any
    configured would reach 169.254.169.254: a dry run must not.
    """
    saved = os.environ.get("AWS_EC2_METADATA_DISABLED")
    os.environ["AWS_EC2_METADATA_DISABLED"] = "true"
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop("AWS_EC2_METADATA_DISABLED", None)
        else:
            os.environ["AWS_EC2_METADATA_DISABLED"] = saved


def split_s3(uri: str) -> tuple[str, str]:
    """(bucket, key) of an ``s3://bucket/key`` URI."""
    if not uri.startswith("s3://"):
        raise SmmpiError(f"not an S3 URI: {uri}")
    bucket, _, key = uri[5:].partition("/")
    return bucket, key
