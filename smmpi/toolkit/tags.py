"""The output tags SageMaker's log shows: ``process.watch`` rewrites mpirun's ``[1,R]`` tags.

``mpirun --tag-output`` prefixes each chunk a rank writes with ``[1,R]<stdout>:``.
The toolkit (4.0.0 and later) reads mpirun's output and prints every line with
each such tag rewritten to ``[1,mpirank:R,algo-K]<stdout>:``, where
``K = R // processes_per_host + 1``. Lines carrying a ``<stdout>`` tag have only
their stdout tags rewritten; other lines, their stderr tags.
"""

from __future__ import annotations

import re

_STDOUT = re.compile(r"\[(\d),(\d+)\]<stdout>")
_STDERR = re.compile(r"\[(\d),(\d+)\]<stderr>")


def _sub(pattern: re.Pattern[str], stream: str, line: str, ppn: int) -> str:
    return pattern.sub(
        lambda m: f"[{m[1]},mpirank:{m[2]},algo-{int(m[2]) // ppn + 1}]<{stream}>", line
    )


def rewrite(line: str, ppn: int) -> str:
    """One line of mpirun's output as the toolkit prints it (``process.watch``)."""
    if "<stdout>" in line:
        return _sub(_STDOUT, "stdout", line, ppn)
    if "<stderr>" in line:
        return _sub(_STDERR, "stderr", line, ppn)
    return line


def container_tag(rank: int, stream: str, ppn: int) -> str:
    """The tag of one rank's line in SageMaker's log (``stddiag`` keeps mpirun's own tag)."""
    return rewrite(f"[1,{rank}]<{stream}>:", ppn)
