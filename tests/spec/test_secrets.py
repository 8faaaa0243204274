"""Credentials never travel by ``--pass-env`` or ``--env``; each refusal says the way."""

from __future__ import annotations

import pytest

from smmpi.errors import BadInput
from smmpi.spec.secrets import check_env_secrets, check_pass_env, is_credential


def test_credential_names_and_the_container_providers_are_credentials() -> None:
    for name in ("AWS_SECRET_ACCESS_KEY", "AWS_PROFILE", "AWS_CONTAINER_CREDENTIALS_FULL_URI"):
        assert is_credential(name)
    for name in ("AWS_REGION", "AWS_ENDPOINT_URL", "PATH", "aws_profile"):
        assert not is_credential(name)


def test_pass_env_points_to_with_credentials() -> None:
    check_pass_env(["AWS_REGION", "OMP_NUM_THREADS"])
    with pytest.raises(BadInput, match=r"^invalid pass-env: 'AWS_PROFILE'; .*--with-credentials"):
        check_pass_env(["OMP_NUM_THREADS", "AWS_PROFILE"])


def test_a_secret_in_the_request_is_refused_by_its_name_only() -> None:
    check_env_secrets(["AWS_PROFILE", "AWS_REGION"])  # a name, not a secret, in the request
    with pytest.raises(BadInput) as refused:
        check_env_secrets(["AWS_SESSION_TOKEN"])
    assert str(refused.value).startswith("invalid env: 'AWS_SESSION_TOKEN'; allowed: no AWS")
