"""``K=V`` pairs (the CLI's form of a mapping): hyperparameters, environment and tags."""

from __future__ import annotations

import pytest

from smmpi.errors import BadInput
from smmpi.spec.pairs import check_env, check_hyperparameters, check_tags, parse_pairs


def test_pairs_and_mappings_become_strings() -> None:
    assert parse_pairs("env", None) == {}
    assert parse_pairs("env", ["A=1", "B=x=y", "C="]) == {"A": "1", "B": "x=y", "C": ""}
    assert parse_pairs("env", "A=1") == {"A": "1"}
    assert parse_pairs("hp", {"lr": 0.1, "n": 3, "on": True, "off": False}) == {
        "lr": "0.1",
        "n": "3",
        "on": "true",
        "off": "false",
    }


@pytest.mark.parametrize(
    ("pairs", "line"),
    [
        (["A"], "invalid env: 'A'; allowed: KEY=VALUE pairs (an '=' after a non-empty key)"),
        (["=1"], "invalid env: '=1'; allowed: KEY=VALUE pairs"),
        ({"A": [1]}, "invalid env[A]: [1]; allowed: a string, number or bool"),
    ],
)
def test_a_pair_that_is_none_is_one_line(pairs: object, line: str) -> None:
    with pytest.raises(BadInput) as refused:
        parse_pairs("env", pairs)  # type: ignore[arg-type]
    assert str(refused.value).startswith(line)


def test_the_containers_own_hyperparameters_are_refused() -> None:
    assert check_hyperparameters(["epochs=3"]) == {"epochs": "3"}
    for name in ("sagemaker_program", "model_dir"):
        with pytest.raises(BadInput, match="reserved for the container"):
            check_hyperparameters([f"{name}=x"])
    with pytest.raises(BadInput, match="a name of 1-256 characters"):
        check_hyperparameters([f"{'h' * 257}=x"])


def test_the_environment_keeps_to_sagemakers_rules_and_holds_no_secret() -> None:
    assert check_env({"OMP_NUM_THREADS": 2}) == {"OMP_NUM_THREADS": "2"}
    with pytest.raises(BadInput, match=r"^invalid env: '1X'; allowed: a variable name"):
        check_env(["1X=y"])
    with pytest.raises(BadInput, match=r"^invalid env\[V\]: 'vvv.*'; allowed: a value of at most"):
        check_env({"V": "v" * 513})
    with pytest.raises(BadInput, match="at most 100 variables"):
        check_env({f"V{i}": "1" for i in range(101)})
    with pytest.raises(BadInput) as secret:
        check_env({"AWS_SECRET_ACCESS_KEY": "do-not-show"})
    assert "do-not-show" not in str(secret.value)


def test_tags_keep_to_sagemakers_rules() -> None:
    assert check_tags(["team=mpi lab"]) == {"team": "mpi lab"}
    for bad in ("aws:owner=me", "k!=v", f"{'k' * 129}=v"):
        with pytest.raises(BadInput, match=r"^invalid tags: .*; allowed: a tag key of 1-128"):
            check_tags([bad])
    with pytest.raises(BadInput, match=r"^invalid tags\[k\]: .*; allowed: a tag value"):
        check_tags({"k": "v" * 257})
