"""algo-1's /opt/ml/output/failure: smmpi's model against the toolkit's own check_error."""

from __future__ import annotations

from typing import Any

import pytest

from smmpi.toolkit.failure import Capture, error_classes, error_message, failure_text
from tests.oracle.oracle import ask

TF_IMAGE = "763104351884.dkr.ecr.us-east-1.amazonaws.com/tensorflow-training:2.19.0-cpu-py312"
PT_IMAGE = "763104351884.dkr.ecr.us-east-1.amazonaws.com/pytorch-training:2.8.0-cpu-py312"
TRACEBACK = """\
[1,3]<stderr>:Traceback (most recent call last):
[1,3]<stderr>:  File "/opt/ml/code/demo.py", line 3, in <module>
[1,3]<stderr>:ZeroDivisionError: division by zero
--------------------------------------------------------------------------
Primary job  terminated normally, but 1 process returned
a non-zero exit code. Per user-direction, the job has been aborted.
--------------------------------------------------------------------------
--------------------------------------------------------------------------
mpirun detected that one or more processes exited with non-zero status, thus causing
the job to be terminated. The first process to do so was:

  Process name: [[4242,1],3]
  Exit code:    1
--------------------------------------------------------------------------
"""
CASES: list[dict[str, Any]] = [
    {"stdout": "[1,0]<stdout>:step 1\n[1,1]<stdout>:step 1\n", "stderr": TRACEBACK, "code": 1},
    {"stdout": "[1,0]<stdout>:RuntimeError: printed, not raised\n", "stderr": "", "code": 1},
    {"stdout": "", "stderr": "[1,12]<stderr>:ValueError: rank twelve\n", "code": 2},
    {"stdout": "", "stderr": "[1,0]<stderr>:killed\n", "code": 137},
    {"stdout": "[1,0]<stdout>:bye\n", "stderr": "", "code": 3},
    {
        "stdout": "",
        "stderr": "[1,1]<stderr>:tensorflow.python.framework.errors_impl.InvalidArgumentError: "
        "shapes\n[1,1]<stderr>:ValueError: again\n[1,1]<stderr>:ValueError: again\n",
        "code": 1,
        "image": TF_IMAGE,
    },
]


@pytest.fixture(scope="module")
def answers() -> list[dict[str, Any]]:
    failures = [{**case, "classes": error_classes(case.get("image", PT_IMAGE))} for case in CASES]
    answer: list[dict[str, Any]] = ask([], failures=failures)["failures"]
    return answer


def _ours(case: dict[str, Any], cmd: list[str]) -> str:
    classes = error_classes(case.get("image", PT_IMAGE))
    captures = [Capture(classes), Capture(classes)]
    for capture, text in zip(captures, (case["stdout"], case["stderr"]), strict=True):
        for line in text.splitlines():
            capture.feed(line)
    return failure_text(cmd, case["code"], error_message(captures), classes)


@pytest.mark.parametrize("index", range(len(CASES)))
def test_failure_text_is_the_toolkits(answers: list[dict[str, Any]], index: int) -> None:
    theirs = answers[index]
    assert theirs["text"] is not None
    assert _ours(CASES[index], theirs["cmd"]) == theirs["text"]


def test_the_failure_names_the_error_and_the_command(answers: list[dict[str, Any]]) -> None:
    first = answers[0]["text"]
    assert first.startswith('ExecuteUserScriptError:\nExitCode 1\nErrorMessage "ZeroDivisionError')
    assert "Command " in first
    assert answers[5]["class"] == "InvalidArgumentError"
    assert 'ExtraInfo "OutOfMemory' in answers[3]["text"]
