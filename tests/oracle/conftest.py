"""The differential suite's one oracle run: every matrix job, and the tag-rewriting inputs."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.oracle import matrix
from tests.oracle.oracle import ask

# Raw ``mpirun --tag-output`` text fed to the toolkit's process.watch, with its ppn:
# seed 004's lines (ranks sharing a physical line), stderr, a traceback, mpirun's own.
SEED_004 = """\
[1,1]<stdout>:Hello I am rank 1
[1,0]<stdout>:point to point
[1,1]<stdout>:I received some data: [1,1]<stdout>:[0 1 2]
[1,3]<stdout>:Data at rank 3 [1,2]<stdout>:Data at rank 2 [1,2]<stdout>:[0 1 2 3 4 5 6 7 8 9]
[1,3]<stdout>:[0 1 2 3 4 5 6 7 8 9]
[1,4]<stdout>:Data at rank 4 [1,5]<stdout>:Data at rank 5 [1,4]<stdout>:[0 1 2 3 4 5 6 7 8 9]
[1,5]<stdout>:[0 1 2 3 4 5 6 7 8 9]
[1,3]<stderr>:Traceback (most recent call last):
[1,3]<stderr>:  File "demo.py", line 3, in <module>
[1,3]<stderr>:ZeroDivisionError: division by zero
MPI_ABORT was invoked on rank 3 in communicator MPI_COMM_WORLD
[1,5]<stderr>:mixed [1,4]<stdout>:streams
"""
WATCH: list[dict[str, Any]] = [
    {
        "ppn": 2,
        "text": "[1,0]<stdout>:hello\n[1,3]<stderr>:oops\n[1,5]<stdout>:x [1,2]<stdout>:y\n",
    },
    {"ppn": 2, "text": SEED_004},
    {"ppn": 1, "text": SEED_004},
    {"ppn": 4, "text": SEED_004},
]


@pytest.fixture(scope="session")
def differential(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """Every matrix job built by smmpi and answered by the real toolkit, in one driver run."""
    tmp = tmp_path_factory.mktemp("oracle")
    built = {case.id: matrix.build(case, tmp) for case in matrix.CASES}
    answer = ask([b.oracle_case for b in built.values()], WATCH)
    yield {"built": built, "answer": answer}
