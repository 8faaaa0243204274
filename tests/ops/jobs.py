"""A training job on the moto server, and the CLI run against it: shared by the ops tests."""

from __future__ import annotations

from typing import Any

from tests.helpers import MotoServer, smmpi

SECRET = "testing-secret-do-not-print"


JOB = "smmpi-demo-2026-11-21-19-56-11-281"


BUCKET = "smmpi-test-bucket"


def create_job(
    moto: MotoServer, name: str = JOB, tagged: bool = True, count: int = 3, ppn: int = 2
) -> None:
    sm = moto.boto3_client("sagemaker")
    sm.create_training_job(
        TrainingJobName=name,
        AlgorithmSpecification={
            "TrainingImage": "763104351884.dkr.ecr.us-west-2.amazonaws.com/"
            "tensorflow-training:2.14-cpu-py310",
            "TrainingInputMode": "File",
        },
        RoleArn="arn:aws:iam::123456789012:role/smmpi-ExecutionRole",
        OutputDataConfig={"S3OutputPath": f"s3://{BUCKET}/jobs"},
        ResourceConfig={
            "InstanceType": "ml.c5.2xlarge",
            "InstanceCount": count,
            "VolumeSizeInGB": 30,
        },
        StoppingCondition={"MaxRuntimeInSeconds": 3600},
        HyperParameters={
            "sagemaker_mpi_enabled": "true",
            "sagemaker_mpi_num_of_processes_per_host": str(ppn),
        },
        Tags=[{"Key": "smmpi:managed", "Value": "true"}] if tagged else [],
    )


def cli_env(env: dict[str, str], moto: MotoServer) -> dict[str, str]:
    return {**env, **moto.aws_env()}


def run(args: list[str], env: dict[str, str]) -> Any:
    done = smmpi(args, env)
    assert SECRET not in done.stdout + done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    return done
