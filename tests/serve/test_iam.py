"""IAM's answer to SimulatePrincipalPolicy, and SDK v3's ModelTrainer role check against serve."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError

from tests.sdk.sdk3 import sdk3_python
from tests.serve.serving import ROLE, ServeProcess, make_role

pytestmark = pytest.mark.aws

#: A user's SDK v3 script up to the trainer (its constructor checks the role with IAM).
V3_TRAINER = """
import logging
from sagemaker.train.model_trainer import ModelTrainer
from sagemaker.core.training.configs import SourceCode, Compute
from sagemaker.core.helper.session_helper import Session

logging.basicConfig(level=logging.INFO, format="%(message)s")
trainer = ModelTrainer(
    training_image="763104351884.dkr.ecr.us-west-2.amazonaws.com/pytorch-training:2.3.0-cpu-py311",
    role="{role}",
    source_code=SourceCode(source_dir="{source}", entry_script="train.py"),
    compute=Compute(instance_type="ml.c5.2xlarge", instance_count=2),
    sagemaker_session=Session(),
)
print("ROLE", trainer.role)
"""


def test_simulate_principal_policy_is_iams_access_denied(serve: ServeProcess) -> None:
    iam = serve.client("iam")
    with pytest.raises(ClientError) as raised:
        iam.simulate_principal_policy(PolicySourceArn=ROLE, ActionNames=["s3:PutObject"])
    answer: dict[str, Any] = dict(raised.value.response)
    assert answer["ResponseMetadata"]["HTTPStatusCode"] == 403
    assert answer["Error"]["Code"] == "AccessDenied"
    assert answer["Error"]["Type"] == "Sender"  # IAM's XML ErrorResponse, parsed by botocore
    assert "not authorized to perform: iam:SimulatePrincipalPolicy" in answer["Error"]["Message"]
    assert ROLE in answer["Error"]["Message"]


def test_sdk_v3_model_trainer_checks_the_role_and_goes_on(
    serve: ServeProcess, tmp_path: Path
) -> None:
    make_role(serve)
    source = tmp_path / "src"
    source.mkdir()
    (source / "train.py").write_text("print('hello')\n")
    env = {k: v for k, v in serve.env.items() if k != "SAGEMAKER_VALIDATE_ROLE"}
    done = subprocess.run(
        [sdk3_python(), "-c", V3_TRAINER.format(role=ROLE, source=source)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-4000:]
    assert f"ROLE {ROLE}" in done.stdout
    # v3's own words for a caller IAM does not let simulate policies
    assert f"Could not verify permissions for role '{ROLE}'" in out
