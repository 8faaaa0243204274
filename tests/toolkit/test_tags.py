"""mpirun's ``[1,R]`` output tags as the toolkit's ``process.watch`` rewrites them."""

from __future__ import annotations

from smmpi.toolkit.hosts import host_of_rank
from smmpi.toolkit.tags import container_tag, rewrite


def test_each_tag_names_the_rank_and_its_instance() -> None:
    assert rewrite("[1,0]<stdout>:hello", 2) == "[1,mpirank:0,algo-1]<stdout>:hello"
    assert rewrite("[1,3]<stderr>:oops", 2) == "[1,mpirank:3,algo-2]<stderr>:oops"
    assert rewrite("[1,13]<stdout>:x", 4) == "[1,mpirank:13,algo-4]<stdout>:x"
    assert rewrite("[1,5]<stdout>:x", 1) == "[1,mpirank:5,algo-6]<stdout>:x"


def test_every_tag_of_a_shared_line_is_rewritten() -> None:
    """Ranks writing at once share a physical line; each of their tags is rewritten."""
    line = "[1,3]<stdout>:Data at rank 3 [1,2]<stdout>:Data at rank 2 [1,2]<stdout>:[0 1]"
    assert rewrite(line, 2) == (
        "[1,mpirank:3,algo-2]<stdout>:Data at rank 3 "
        "[1,mpirank:2,algo-2]<stdout>:Data at rank 2 [1,mpirank:2,algo-2]<stdout>:[0 1]"
    )


def test_a_line_with_stdout_tags_keeps_its_stderr_tags() -> None:
    """``process.watch`` rewrites one stream's tags per line: stdout's when it has any."""
    line = "[1,5]<stderr>:mixed [1,4]<stdout>:streams"
    assert rewrite(line, 2) == "[1,5]<stderr>:mixed [1,mpirank:4,algo-3]<stdout>:streams"


def test_untagged_and_already_rewritten_lines_are_kept() -> None:
    for line in (
        "MPI_ABORT was invoked on rank 3 in communicator MPI_COMM_WORLD",
        "[1,mpirank:3,algo-2]<stdout>:done",
        "",
        "[1,3]<stdin>:not a stream mpirun tags",
    ):
        assert rewrite(line, 2) == line


def test_a_ranks_tag_names_the_instance_it_runs_on() -> None:
    """The tag's host is the instance ``-map-by slot`` puts the rank on, in every world."""
    for instances, ppn in ((3, 2), (2, 1), (2, 4)):
        for rank in range(instances * ppn):
            host = host_of_rank(rank, ppn, instances)
            assert container_tag(rank, "stdout", ppn) == f"[1,mpirank:{rank},{host}]<stdout>:"
            assert container_tag(rank, "stderr", ppn) == f"[1,mpirank:{rank},{host}]<stderr>:"
