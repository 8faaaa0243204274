"""AWS credentials never travel by the general ways in: ``--pass-env`` and ``--env``.

``--pass-env NAME`` hands a variable of this shell to every local rank; a
credential that way would reach every rank without a word. The one way is
``--with-credentials``, which says so when the run starts. ``--env K=V`` puts the
value in the CreateTrainingJob request, where anyone who may describe the job
reads it; on SageMaker the ranks get the execution role's credentials.
"""

from __future__ import annotations

from collections.abc import Iterable

from smmpi.errors import BadInput

#: Variables that hold AWS credentials, or lead the SDK to them.
CREDENTIAL_NAMES = frozenset(
    {
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_SECURITY_TOKEN",
        "AWS_CREDENTIAL_EXPIRATION",
        "AWS_PROFILE",
        "AWS_DEFAULT_PROFILE",
        "AWS_CONFIG_FILE",
        "AWS_SHARED_CREDENTIALS_FILE",
        "AWS_WEB_IDENTITY_TOKEN_FILE",
        "AWS_ROLE_ARN",
        "AWS_ROLE_SESSION_NAME",
        "AWS_CREDENTIAL_PROCESS",
    }
)
#: The container credentials provider's variables (ECS, EKS Pod Identity, SageMaker itself).
CREDENTIAL_PREFIXES = ("AWS_CONTAINER_",)
#: Names that are the secret itself: never in a request's Environment.
SECRET_NAMES = frozenset(
    {
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_SECURITY_TOKEN",
        "AWS_CONTAINER_AUTHORIZATION_TOKEN",
    }
)


def is_credential(name: str) -> bool:
    return name in CREDENTIAL_NAMES or name.startswith(CREDENTIAL_PREFIXES)


def check_pass_env(names: Iterable[str]) -> None:
    """``--pass-env`` names no credential (one line pointing to ``--with-credentials``)."""
    for name in names:
        if is_credential(name):
            raise BadInput(
                "pass-env",
                name,
                "a variable that holds no AWS credentials "
                "(pass this shell's AWS identity with --with-credentials)",
            )


def check_env_secrets(names: Iterable[str]) -> None:
    """The request's Environment holds no credential (its value is never shown)."""
    for name in names:
        if name in SECRET_NAMES:
            raise BadInput(
                "env",
                name,
                "no AWS credentials (the request stores them for anyone who may describe the "
                "job; on SageMaker ranks get the execution role's, locally use --with-credentials)",
            )
