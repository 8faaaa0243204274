"""pip's output, read for the one line that says what went wrong."""

from __future__ import annotations

import re

#: pip's own summary lines, which say that something failed but not what.
_GENERIC = ("subprocess-exited-with-error", "metadata-generation-failed", "See above")


def pip_reason(stderr: str) -> str:
    """The line of pip's output that says what went wrong (the build's own error first)."""
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    errors = [
        ln
        for ln in lines
        if re.match(r"(error|ERROR):|\w*(Error|Exception):", ln)
        and not any(g in ln for g in _GENERIC)
    ]
    if errors:
        return errors[0]
    useful = [ln for ln in lines if not any(g in ln for g in _GENERIC)]
    return (useful or ["pip failed"])[-1]
