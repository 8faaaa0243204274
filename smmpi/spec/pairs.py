"""``K=V`` pairs, the CLI's form of a mapping: hyperparameters, the container's environment, tags.

Each check turns the user's pairs (or a mapping) into ``{str: str}`` within SageMaker's
rules for that field, or raises :class:`~smmpi.errors.BadInput` naming the pair.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from smmpi.aws.facts import ENV_KEY_RE, MAX_ENV, TAG_RE
from smmpi.errors import BadInput
from smmpi.spec.secrets import check_env_secrets

#: A mapping, or ``K=V`` strings (the CLI's form), or None.
Pairs = Mapping[str, Any] | Sequence[str] | None


def parse_pairs(field_name: str, pairs: Sequence[str] | Mapping[str, Any] | None) -> dict[str, str]:
    """``["K=V", ...]`` (the CLI form) or a mapping -> dict; a pair without ``=`` is refused."""
    if pairs is None:
        return {}
    if isinstance(pairs, Mapping):
        return {str(k): _scalar(field_name, k, v) for k, v in pairs.items()}
    if isinstance(pairs, str):
        pairs = [pairs]
    out: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = str(pair).partition("=")
        if not sep or not key:
            raise BadInput(field_name, pair, "KEY=VALUE pairs (an '=' after a non-empty key)")
        out[key] = value
    return out


def _scalar(field_name: str, key: object, value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (str, int, float)):
        return str(value)
    raise BadInput(f"{field_name}[{key}]", value, "a string, number or bool")


def check_hyperparameters(raw: Pairs) -> dict[str, str]:
    """User hyperparameters: names the container does not reserve for itself."""
    hps = parse_pairs("hyperparameter", raw)
    for key in hps:
        if key.startswith("sagemaker_") or key == "model_dir":
            raise BadInput(
                "hyperparameter",
                key,
                "a name not starting with 'sagemaker_' and not 'model_dir' "
                "(reserved for the container)",
            )
        if not key or len(key) > 256:
            raise BadInput("hyperparameter", key, "a name of 1-256 characters")
    return hps


def check_env(raw: Pairs) -> dict[str, str]:
    """The container's Environment, within SageMaker's limits."""
    env = parse_pairs("env", raw)
    check_env_secrets(env)
    for key, value in env.items():
        if not ENV_KEY_RE.match(key) or len(key) > 512:
            raise BadInput("env", key, "a variable name matching [A-Za-z_][A-Za-z0-9_]*")
        if len(value) > 512:
            raise BadInput(f"env[{key}]", value[:40] + "...", "a value of at most 512 chars")
    if len(env) > MAX_ENV:
        raise BadInput("env", len(env), f"at most {MAX_ENV} variables")
    return env


def check_tags(raw: Pairs) -> dict[str, str]:
    """The job's tags, as SageMaker's tag rules allow them."""
    tags = parse_pairs("tags", raw)
    for key, value in tags.items():
        if key.startswith("aws:") or not 1 <= len(key) <= 128 or not TAG_RE.match(key):
            raise BadInput(
                "tags",
                key,
                "a tag key of 1-128 letters, digits, spaces and _.:/=+-@, not starting with 'aws:'",
            )
        if len(value) > 256 or not TAG_RE.match(value):
            raise BadInput(
                f"tags[{key}]",
                value,
                "a tag value of at most 256 letters, digits, spaces and _.:/=+-@",
            )
    return tags
