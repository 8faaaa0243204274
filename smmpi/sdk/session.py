"""The SageMaker SDK, imported quietly and unable to reach hosts the user did not configure.

- the session honours ``AWS_ENDPOINT_URL`` (a moto server in tests), the
  region and the bucket;
- SDK telemetry is off: the documented ``TelemetryOptOut`` setting is given to
  the session, and the emitter is disabled as well, because it would send a
  request to an AWS host the user never configured;
- an offline session (dry run) has dummy credentials and refuses every HTTP request.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import json
import logging
import os
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from smmpi.aws.clients import botocore_session, no_metadata_lookups, offline_session, session
from smmpi.aws.facts import shared_loader
from smmpi.errors import SmmpiError

if TYPE_CHECKING:
    import boto3

    from smmpi.sdk.settings import Settings


# The SDK's documented switch (SageMaker.PythonSDK.Modules.TelemetryOptOut).
TELEMETRY_OPT_OUT_CONFIG: dict[str, Any] = {
    "SchemaVersion": "1.0",
    "SageMaker": {"PythonSDK": {"Modules": {"TelemetryOptOut": True}}},
}


@functools.lru_cache(maxsize=1)
def import_sdk() -> Any:
    """Import the SDK quietly, with telemetry unable to leave the process.

    The v2 deprecation banner is suppressed through the SDK's own variable (set
    before import), its INFO chatter about config files is silenced, and the
    schema check the SDK repeats on every config lookup is memoised: our config
    is a constant, and re-validating it ~20 times per job costs seconds.
    """
    os.environ.setdefault("SAGEMAKER_SUPPRESS_V2_WARNING", "1")
    _quiet_sdk_loggers()
    # Importing the SDK builds a default JumpStart session, which resolves
    # credentials; with none configured botocore would ask the instance
    # metadata service (169.254.169.254). Nothing is called with that session,
    # so the lookup is switched off for the import only.
    try:
        with no_metadata_lookups(), _sessions_share_loader(), _keep_root_logging():
            import sagemaker
            import sagemaker.experiments  # imported by fit(); configures logging on import
            import sagemaker.utils
            from sagemaker.telemetry import telemetry_logging
    except ImportError as err:  # pragma: no cover - depends on the install
        raise SmmpiError("the SageMaker SDK is not installed: pip install 'smmpi[aws]'") from err

    def _no_telemetry(*args: Any, **kwargs: Any) -> None:
        return None

    telemetry_logging._send_telemetry_request = _no_telemetry
    sdk_utils: Any = sagemaker.utils
    validate = sdk_utils.validate_sagemaker_config
    # Our own config is a constant that tests validate against the SDK's schema.
    checked: set[str] = {json.dumps(TELEMETRY_OPT_OUT_CONFIG, sort_keys=True)}

    def _validate_once(cfg: Any = None) -> Any:
        key = json.dumps(cfg, sort_keys=True, default=str)
        if key in checked:
            return None
        result = validate(cfg)
        checked.add(key)
        return result

    sdk_utils.validate_sagemaker_config = _validate_once
    sdk_session_module: Any = sagemaker.session
    sdk_session_module.validate_sagemaker_config = _validate_once
    _quiet_sdk_loggers()  # the SDK sets its config logger to INFO while importing
    return sagemaker


@contextlib.contextmanager
def _keep_root_logging() -> Iterator[None]:
    """Undo the SDK's import-time ``logging.basicConfig(level=INFO)`` on the root logger.

    Left in place it makes botocore print INFO lines on stderr for every client.
    """
    root = logging.getLogger()
    level, handlers = root.level, list(root.handlers)
    try:
        yield
    finally:
        root.setLevel(level)
        for handler in list(root.handlers):
            if handler not in handlers:
                root.removeHandler(handler)


@contextlib.contextmanager
def _sessions_share_loader() -> Iterator[None]:
    """Botocore sessions created meanwhile use smmpi's data loader.

    Importing the SDK builds a JumpStart session and a SageMaker client on it,
    which would parse the SageMaker API model a second time (~0.15 s of every
    dry run). Sessions made with a custom AWS_DATA_PATH keep their own loader.
    """
    import botocore.session

    original = botocore.session.create_loader

    def create(search_paths_str: Any = None) -> Any:
        return original(search_paths_str) if search_paths_str else shared_loader()

    botocore_session_module: Any = botocore.session
    botocore_session_module.create_loader = create
    try:
        yield
    finally:
        botocore_session_module.create_loader = original


def _quiet_sdk_loggers() -> None:
    for name in (
        "sagemaker",
        "sagemaker.config",
        "sagemaker.image_uris",
        "sagemaker.telemetry.telemetry_logging",
    ):
        logging.getLogger(name).setLevel(logging.WARNING)


def boto_session(settings: Settings, *, offline: bool) -> boto3.Session:
    """A boto3 session for the region; offline, dummy keys and no HTTP at all."""
    return offline_session(settings.region) if offline else session(settings.region)


def sdk_session(settings: Settings, boto: boto3.Session) -> Any:
    """A SageMaker Session on ``boto`` with our bucket and telemetry opted out."""
    sagemaker = import_sdk()
    return sagemaker.session.Session(
        boto_session=boto,
        default_bucket=settings.bucket,
        sagemaker_config=copy.deepcopy(TELEMETRY_OPT_OUT_CONFIG),
    )


def share_default_session_loader() -> None:
    """Let boto3's default session reuse smmpi's data loader.

    Every SDK estimator builds a throwaway SageMaker client on boto3's default
    session (its TensorBoard helper); sharing the loader saves parsing the
    SageMaker API model again. A default session the program set up is left alone.
    """
    import boto3

    if boto3.DEFAULT_SESSION is None:
        boto3.setup_default_session(botocore_session=botocore_session())
