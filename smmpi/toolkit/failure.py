"""``/opt/ml/output/failure`` as the toolkit writes it on algo-1 when mpirun fails.

``MasterRunner.run`` starts mpirun through ``process.check_error`` with
``capture_error=True`` (both framework toolkits ask for it). Its
``process.watch`` reads mpirun's stdout and stderr line by line; on each pipe,
from the first line that names a Python exception, an MPI failure or one of
the runner's error classes, every line is kept (its ``[1,R]<stream>`` tag of a
one-digit rank removed, spaces and colons stripped). A non-zero exit raises
``ExecuteUserScriptError`` (or, when the kept text names one of the error
classes, an error of that name) and ``trainer.train`` writes its text to the
failure file:

    ExecuteUserScriptError:
    ExitCode 1
    ErrorMessage "<kept lines>"
    Command "<mpirun argv joined by spaces>"

(T ``process.watch``, ``process.check_error``, ``errors._CalledProcessError``,
``trainer.train``, ``files.write_failure_file``.) Workers end normally: their
``trainer.train`` writes ``success``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from smmpi.toolkit.images import framework_of

DEFAULT_ERROR_CLASS = "ExecuteUserScriptError"
#: sagemaker_training._PYTHON_ERRORS_ (4.8.3 and 5.1.4 alike).
PYTHON_ERRORS = (
    "BaseException Exception ArithmeticError AssertionError AttributeError BlockingIOError "
    "BrokenPipeError BufferError ChildProcessError ConnectionAbortedError ConnectionError "
    "ConnectionRefusedError ConnectionResetError EOFError EnvironmentError FileExistsError "
    "FileNotFoundError FloatingPointError IOError ImportError IndentationError IndexError "
    "InterruptedError IsADirectoryError KeyError LookupError MemoryError ModuleNotFoundError "
    "NameError NotADirectoryError NotImplementedError OSError OverflowError PermissionError "
    "ProcessLookupError RecursionError ReferenceError RuntimeError SyntaxError SystemError "
    "TabError TimeoutError TypeError UnboundLocalError UnicodeDecodeError UnicodeEncodeError "
    "UnicodeError UnicodeTranslateError ValueError ZeroDivisionError Invalidrequirement "
    "ResourceExhaustedError OutOfRangeError InvalidArgumentError"
).split()
#: sagemaker_training._MPI_ERRORS_ ("mpirun.real": the images wrap Open MPI's mpirun).
MPI_ERRORS = ("mpirun.real", "ORTE")
#: ``process.get_tensorflow_exception_classes`` in a TensorFlow image: the classes of
#: ``tensorflow.python.framework.errors_impl`` (TensorFlow 2.19), and XlaRuntimeError.
TENSORFLOW_ERRORS = (
    "AbortedError AlreadyExistsError CancelledError DataLossError DeadlineExceededError "
    "FailedPreconditionError InaccessibleTensorError InternalError InvalidArgumentError "
    "NotFoundError OpError OperatorNotAllowedInGraphError OutOfRangeError "
    "PermissionDeniedError ResourceExhaustedError UnauthenticatedError UnavailableError "
    "UnimplementedError UnknownError raise_exception_on_not_ok_status XlaRuntimeError"
).split()
#: ``process.check_error``: the ExtraInfo of an exit code of 137.
OUT_OF_MEMORY = "OutOfMemory: Process killed by SIGKILL (signal 9)"
#: At most this many kept lines per pipe (the toolkit keeps them all).
MAX_LINES = 10_000

# process.watch removes one-digit ranks' stderr tags, then stdout tags (in that order)
_TAGS = (re.compile(r"\[(\d),(\d)\]<stderr>"), re.compile(r"\[(\d),(\d)\]<stdout>"))


def error_classes(image: str) -> list[str]:
    """MasterRunner's error classes: smdebug's, TensorFlow's, smdistributed's.

    Neither smdebug nor smdistributed is in the DLC training images, so each
    of those lists falls back to ExecuteUserScriptError.
    """
    tensorflow = TENSORFLOW_ERRORS if image and framework_of(image) == "tensorflow" else []
    return [DEFAULT_ERROR_CLASS, *tensorflow]


class Capture:
    """One pipe of mpirun as ``process.watch`` reads it: what it keeps for the error message."""

    def __init__(self, classes: Sequence[str]) -> None:
        self.markers = [*PYTHON_ERRORS, *MPI_ERRORS, *classes]
        self.kept: list[str] = []
        self._seen: set[str] = set()  # the kept lines, for the toolkit's "not in output"
        self.started = False

    def feed(self, line: str) -> None:
        if len(self.kept) >= MAX_LINES:
            return
        err_line = _TAGS[1].sub("", _TAGS[0].sub("", line))
        if not self.started:
            if not any(marker in err_line for marker in self.markers):
                return
            self.started = True
        elif err_line in self._seen:
            return
        kept = err_line.strip(" :\n") + "\n"
        self.kept.append(kept)
        self._seen.add(kept)

    def text(self) -> str:
        return " ".join(self.kept)


def error_message(captures: Iterable[Capture]) -> str:
    """``check_error``'s message: both pipes' kept text, repeated lines removed."""
    text = " ".join(c.text() for c in captures)
    return "\n".join(dict.fromkeys(text.split("\n"))).strip()


def _class_name(message: str, classes: Sequence[str]) -> str:
    """The error's name: a class named in the message (the first to appear), else the default."""
    named = [(message.find(c), c) for c in classes if c != DEFAULT_ERROR_CLASS and c in message]
    return min(named)[1] if named else DEFAULT_ERROR_CLASS


def failure_text(
    command: Sequence[str], return_code: int, message: str, classes: Sequence[str]
) -> str:
    """What ``trainer.train`` writes to algo-1's ``/opt/ml/output/failure``."""
    extra = OUT_OF_MEMORY if return_code == 137 else None
    name = _class_name(message, classes) if message else DEFAULT_ERROR_CLASS
    lines = [f"{name}:", f"ExitCode {return_code}", f'ErrorMessage "{message}"']
    if extra is not None:
        lines.append(f'ExtraInfo "{extra}"')
    lines.append(f'Command "{" ".join(command)}"')
    return "\n".join(lines).strip()
