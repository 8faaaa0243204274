"""Output tags: smmpi's rewriting against the toolkit's ``process.watch``, and both formats read."""

from __future__ import annotations

from typing import Any

import pytest

from smmpi.mpi_output import FailureScan, LineAssembler
from smmpi.toolkit.tags import rewrite
from tests.helpers import MotoServer
from tests.ops.jobs import JOB, cli_env, create_job, run
from tests.ops.test_cloudwatch import write_streams
from tests.oracle.conftest import SEED_004, WATCH


@pytest.mark.parametrize("index", range(len(WATCH)))
def test_tags_are_rewritten_as_the_toolkit_does(differential: dict[str, Any], index: int) -> None:
    item = WATCH[index]
    theirs = differential["answer"]["watch"][index]
    ours = [rewrite(line, item["ppn"]) for line in item["text"].strip().split("\n")]
    assert ours == theirs


def _toolkit_stream(differential: dict[str, Any]) -> str:
    """Seed 004's output as SageMaker's log holds it today: through the real toolkit (ppn 2)."""
    return "\n".join(differential["answer"]["watch"][1])


def test_both_formats_give_each_rank_the_same_lines(differential: dict[str, Any]) -> None:
    def demux(text: str) -> dict[int, list[str]]:
        assembler, out = LineAssembler(), {}
        for line in text.splitlines():
            for t in assembler.feed(line):
                out.setdefault(t.rank, []).append(t.text)
        return out

    assert demux(_toolkit_stream(differential)) == demux(SEED_004)


def test_the_failure_scan_names_rank_and_host_from_the_tag(differential: dict[str, Any]) -> None:
    scan = FailureScan()
    for line in _toolkit_stream(differential).splitlines():
        scan.feed(line)
    assert scan.failed_rank() == 3
    assert scan.hosts[3] == "algo-2"
    assert scan.reason(3) == "ZeroDivisionError: division by zero"


@pytest.mark.aws
def test_logs_demux_a_rank_from_the_toolkits_format(
    differential: dict[str, Any], moto_server: MotoServer, env: dict[str, str]
) -> None:
    """`smmpi logs JOB --rank 3` on a CloudWatch stream in the [1,mpirank:3,algo-2] format."""
    create_job(moto_server)
    write_streams(moto_server, {"algo-1": _toolkit_stream(differential)})
    done = run(["logs", JOB, "--rank", "3"], cli_env(env, moto_server))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "Data at rank 3 [0 1 2 3 4 5 6 7 8 9]",
        "Traceback (most recent call last):",
        '  File "demo.py", line 3, in <module>',  # the rank's own text, unchanged
        "ZeroDivisionError: division by zero",
    ]
    assert "smmpi: rank 3 (algo-2) failed: ZeroDivisionError: division by zero" in done.stderr
    whole = run(["logs", JOB], cli_env(env, moto_server))
    assert "==> rank 5 (algo-3) <==" in whole.stdout.splitlines()


@pytest.mark.aws
def test_logs_of_one_host_include_its_ranks_from_the_tags(
    differential: dict[str, Any], moto_server: MotoServer, env: dict[str, str]
) -> None:
    """`--host algo-2`: algo-2's own stream and, from algo-1's stream, the ranks tagged algo-2."""
    create_job(moto_server)
    write_streams(
        moto_server,
        {"algo-1": _toolkit_stream(differential), "algo-2": "worker line of algo-2"},
    )
    done = run(["logs", JOB, "--host", "algo-2"], cli_env(env, moto_server))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert "worker line of algo-2" in lines
    assert "[2] Data at rank 2 [0 1 2 3 4 5 6 7 8 9]" in lines
    assert not any(line.startswith(("[0]", "[1]", "[4]", "[5]")) for line in lines), lines
