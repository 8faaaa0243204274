"""SageMaker's runner: a job built through the estimator or ModelTrainer, then submitted."""

from __future__ import annotations

from typing import Any

from smmpi.runners.sagemaker.submit import Submission, submit
from smmpi.runners.sagemaker.trainer import submit_trainer
from smmpi.spec import MPIJob


class SageMakerJobs:
    """:class:`~smmpi.runners.base.Runner` that creates the job on SageMaker (or the endpoint
    ``AWS_ENDPOINT_URL`` names) and follows it while waiting."""

    name = "sagemaker"

    def start(self, job: MPIJob, **settings: Any) -> Submission:
        """``settings``: :func:`~smmpi.runners.sagemaker.submit.submit`'s keywords (``wait``,
        ``echo``, ``stop_on_interrupt``, ...); ``api="model-trainer"`` builds the request
        through ModelTrainer and uploads its ``code`` and ``sm_drivers`` channels."""
        if job.api == "model-trainer":
            return submit_trainer(job, **settings)
        return submit(job, **settings)
