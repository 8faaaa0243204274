"""Helper scripts smmpi runs in another Python: a JSON question on stdin, a JSON answer on
the last line of stdout (the SDK v3 capture, ModelTrainer's driver probe)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Sequence
from typing import Any

from smmpi.errors import SmmpiError


def json_answer(argv: Sequence[str], question: Any, timeout: float, what: str) -> dict[str, Any]:
    """The JSON object ``argv`` prints last for ``question``; else SmmpiError, one line that
    starts with ``what`` and ends with the helper's last line of stderr (or its timeout)."""
    try:
        done = subprocess.run(
            list(argv),
            input=json.dumps(question),
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise SmmpiError(f"{what}: no answer in {timeout:g} s") from None
    try:
        answer = json.loads(done.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        answer = None
    if not isinstance(answer, dict):
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise SmmpiError(f"{what}: {tail}")
    return answer
