"""The differential suite's one oracle run: every matrix job, and the tag-rewriting inputs."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.oracle import matrix
from tests.oracle.oracle import ask

# Raw ``mpirun --tag-output`` text fed to the toolkit's process.watch, with its ppn.
WATCH: list[dict[str, Any]] = [
    {
        "ppn": 2,
        "text": "[1,0]<stdout>:hello\n[1,3]<stderr>:oops\n[1,5]<stdout>:x [1,2]<stdout>:y\n",
    },
]


@pytest.fixture(scope="session")
def differential(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """Every matrix job built by smmpi and answered by the real toolkit, in one driver run."""
    tmp = tmp_path_factory.mktemp("oracle")
    built = {case.id: matrix.build(case, tmp) for case in matrix.CASES}
    answer = ask([b.oracle_case for b in built.values()], WATCH)
    yield {"built": built, "answer": answer}
