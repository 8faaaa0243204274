"""Framework and Python versions, checked against the installed SDK's own image table."""

from __future__ import annotations

import pytest

from smmpi.errors import BadInput
from smmpi.spec.versions import (
    DEFAULT_VERSIONS,
    FRAMEWORKS,
    check_framework,
    resolve_versions,
    training_versions,
)


def test_the_pinned_defaults_are_in_the_sdks_table() -> None:
    for framework in FRAMEWORKS:
        version, py = DEFAULT_VERSIONS[framework]
        entry = training_versions(framework)["versions"][version]
        assert py in entry["py_versions"]
        assert resolve_versions(framework, None, None) == (version, py)
        assert check_framework(framework) == (framework, version, py)


def test_an_alias_resolves_and_the_python_follows_the_image() -> None:
    table = training_versions("pytorch")
    alias, full = next(iter(table["version_aliases"].items()))
    version, py = resolve_versions("pytorch", alias, None)
    assert version == alias and py in table["versions"][full].get("py_versions", [py])


@pytest.mark.parametrize(
    ("given", "field"),
    [
        (("tensorflow", "0.0.1", None), "framework_version"),
        (("tensorflow", "", None), "framework_version"),
        (("pytorch", "2.8.0", "py27"), "py_version"),
    ],
)
def test_a_pair_the_sdk_cannot_resolve_is_one_line(
    given: tuple[str, str, str | None], field: str
) -> None:
    with pytest.raises(BadInput) as refused:
        resolve_versions(*given)
    assert str(refused.value).startswith(f"invalid {field}: ")


def test_an_unknown_framework_names_the_two() -> None:
    with pytest.raises(
        BadInput, match=r"^invalid framework: 'jax'; allowed: tensorflow or pytorch$"
    ):
        check_framework("jax")
