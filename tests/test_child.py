"""Helper scripts in another Python: JSON in on stdin, the last line of stdout out."""

from __future__ import annotations

import sys

import pytest

from smmpi.child import json_answer
from smmpi.errors import SmmpiError

ECHO = "import json, sys; q = json.load(sys.stdin); print('chatter'); print(json.dumps({'got': q}))"


def _py(code: str) -> list[str]:
    return [sys.executable, "-c", code]


def test_the_answer_is_the_last_line_for_the_question() -> None:
    assert json_answer(_py(ECHO), {"n": [1, 2]}, 60, "probe") == {"got": {"n": [1, 2]}}


@pytest.mark.parametrize(
    ("code", "line"),
    [
        ("import sys; sys.exit('the driver broke')", "probe: the driver broke"),
        ("print('[1, 2]')", "probe: no output"),  # JSON, not an object
        ("print('not json')", "probe: no output"),
        ("pass", "probe: no output"),
        ("import sys; print('one\\ntwo', file=sys.stderr); sys.exit(3)", "probe: two"),
    ],
)
def test_no_answer_is_one_line_ending_with_the_helpers_last_words(code: str, line: str) -> None:
    with pytest.raises(SmmpiError) as failed:
        json_answer(_py(code), None, 60, "probe")
    assert str(failed.value) == line


def test_a_helper_that_never_answers_is_timed_out() -> None:
    with pytest.raises(SmmpiError, match=r"^probe: no answer in 0\.5 s$"):
        json_answer(_py("import time; time.sleep(120)"), {}, 0.5, "probe")
