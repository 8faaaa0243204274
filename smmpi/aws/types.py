"""Type names of the SageMaker, S3 and CloudWatch Logs APIs, for annotations only.

They come from boto3-stubs (a development dependency), so modules import them
under ``TYPE_CHECKING`` and nothing here is needed at run time::

    if TYPE_CHECKING:
        from smmpi.aws.types import Request, SageMakerClient
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mypy_boto3_logs.client import CloudWatchLogsClient
    from mypy_boto3_s3.client import S3Client
    from mypy_boto3_sagemaker.client import SageMakerClient
    from mypy_boto3_sagemaker.type_defs import (
        CreateTrainingJobRequestTypeDef as Request,
    )
    from mypy_boto3_sagemaker.type_defs import (
        DescribeTrainingJobResponseTypeDef as Description,
    )

__all__ = ["CloudWatchLogsClient", "Description", "Request", "S3Client", "SageMakerClient"]
