"""``smmpi serve``: SageMaker's training API on this machine, every job run for real.

Any client pointed at it with ``AWS_ENDPOINT_URL`` (the SDK's ``fit``, boto3,
the AWS CLI, smmpi itself) creates training jobs that the local runner runs,
the same code as ``submit --local``; S3, CloudWatch Logs, STS, IAM and
CloudFormation come from moto in the same process.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from smmpi.serve.server import Server

__all__ = ["Server"]


def __getattr__(name: str) -> Any:
    if name == "Server":
        from smmpi.serve.server import Server

        return Server
    raise AttributeError(name)
