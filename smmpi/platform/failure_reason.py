"""A failed job's FailureReason, as SageMaker gives it, for every local route.

``describe.json`` of ``submit --local``, ``smmpi serve``'s DescribeTrainingJob and
``smmpi status`` read this one text: the program's own ``/opt/ml/output/failure`` when it
wrote one, then smmpi's line; else the toolkit's error as SageMaker wraps it
(``AlgorithmError: ...``), from algo-1's failure file (what the container's toolkit left
there), then smmpi's line naming rank, host and cause (:mod:`smmpi.causes`, whose
:func:`~smmpi.causes.summary` reads it back).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from smmpi.causes import FAILURE_CHARS, failure_reason, with_line
from smmpi.toolkit.mpirun import container_mpirun

# What the toolkit writes to algo-1's /opt/ml/output/failure (smmpi.toolkit.failure)
TOOLKIT_TEXT = re.compile(
    r'(\w+):\nExitCode (-?\d+)\nErrorMessage "(.*)"\n(ExtraInfo ".*"\n)?Command "(.*)"\s*\Z',
    re.S,
)


def program_failure(hosts_dir: Path, runner_line: str | None) -> str | None:
    """The first 1024 characters of a program's own ``/opt/ml/output/failure``, if one wrote it."""
    if not hosts_dir.is_dir():
        return None
    for host in sorted(hosts_dir.iterdir()):
        path = host / "opt" / "ml" / "output" / "failure"
        if path.is_file() and not path.is_symlink():
            text = path.read_text(encoding="utf-8", errors="replace")
            if TOOLKIT_TEXT.match(text):
                return None  # the container's toolkit wrote it (here: smmpi's model of it)
            if text.strip() and text.strip() != (runner_line or "").strip():
                return text[:FAILURE_CHARS]
    return None


def toolkit_reason(hosts_dir: Path, line: str | None) -> str | None:
    """``AlgorithmError: `` and algo-1's failure file as the toolkit wrote it, then smmpi's line."""
    path = hosts_dir / "algo-1" / "opt" / "ml" / "output" / "failure"
    if not path.is_file() or path.is_symlink():
        return None
    found = TOOLKIT_TEXT.match(path.read_text(encoding="utf-8", errors="replace"))
    if found is None:
        return None
    error, code, message, extra, command = found.groups()
    return failure_reason(error, code, message, command, line, extra or "")


def reason(
    request: Mapping[str, Any],
    result: Mapping[str, Any],
    hosts_dir: Path,
    command: Sequence[str] | None = None,
) -> str:
    """FailureReason of a failed job: a refusal or upload failure, else the program's failure
    file, else the toolkit's error and smmpi's line.

    ``result``: ``line`` (smmpi's line), ``exit_code``, ``reason`` (mpirun's message), and
    ``upload`` or ``error`` (the local runner refused the request before starting it).
    ``command``: the container's mpirun line, where the caller planned it (else read from
    ``request``; "mpirun" when the request has none).
    """
    line = result.get("line")
    if result.get("upload"):
        text = str(result["upload"])
    elif result.get("error"):
        text = f"ClientError: {line}"
    else:
        program = program_failure(hosts_dir, line)
        text = with_line(program, line) if program else toolkit_reason(hosts_dir, line) or ""
    if not text:
        code = int(result.get("exit_code") or 1)
        message = str(result.get("reason") or "")
        shown = _command(request) if command is None else shlex.join(command) or "mpirun"
        text = failure_reason("ExecuteUserScriptError", code, message, shown, line)
    return text[:FAILURE_CHARS]


def _command(request: Mapping[str, Any]) -> str:
    try:
        return shlex.join(container_mpirun(request))
    except (KeyError, ValueError, TypeError):
        return "mpirun"
