"""A TensorFlow job's hyperparameters go through /bin/sh unquoted: what breaks it is refused."""

from __future__ import annotations

import pytest

from smmpi.errors import BadInput
from smmpi.spec.shell import breaking, check_shell_words


def test_what_breaks_the_shell_is_found() -> None:
    assert breaking("0.01") == [] and breaking("${HOME}") == []  # a whole variable is harmless
    assert breaking("it's") == ["'"]
    assert breaking("a;b|c") == [";", "|"]
    assert breaking("${oops") == ["${"]


def test_only_tensorflow_jobs_are_refused_naming_the_cause_and_the_fix() -> None:
    check_shell_words("pytorch", {"msg": "it's fine"})
    check_shell_words("tensorflow", {"lr": "0.1"})
    with pytest.raises(BadInput) as refused:
        check_shell_words("tensorflow", {"msg": "it's"})
    line = str(refused.value)
    assert line.startswith('invalid hyperparameter msg: "it\'s"; allowed: in a TensorFlow job')
    assert "Unterminated quoted string" in line and "--framework pytorch" in line
    with pytest.raises(BadInput, match=r"^invalid hyperparameter: 'a\(b'"):
        check_shell_words("tensorflow", {"a(b": "1"})
