"""Each rank's lines rebuilt from Open MPI's tagged output, with seed 004's interleaving."""

from __future__ import annotations

from smmpi.mpi_lines import MAX_LINE, LineAssembler, Tagged, cut_note, is_tagged, split_tags

#: Seed 004: ranks 3 and 2 printed without a newline, so one physical line holds three pieces.
SEED_004 = [
    "[1,3]<stdout>:Data at rank 3 [1,2]<stdout>:Data at rank 2 [1,2]<stdout>:[0 1 2]",
    "[1,3]<stdout>:[0 1 2]",
]


def test_every_tag_form_is_a_ranks_line() -> None:
    assert is_tagged("[1,3]<stdout>:x") and is_tagged("[1,mpirank:3,algo-2]<stderr>:x")
    assert not is_tagged("mpirun: Forwarding signal 15") and not is_tagged("")
    assert split_tags("[1,mpirank:3,algo-2]<stderr>:  indented\n") == [
        Tagged(3, "stderr", "  indented", "algo-2")
    ]
    assert split_tags("text [1,0]<stdout>:after") == []  # untagged text first: mpirun's own


def test_interleaved_ranks_keep_their_own_words() -> None:
    lines = LineAssembler()
    assert lines.feed(SEED_004[0]) == [Tagged(2, "stdout", "Data at rank 2 [0 1 2]")]
    assert lines.feed(SEED_004[1]) == [Tagged(3, "stdout", "Data at rank 3 [0 1 2]")]
    assert lines.flush() == []


def test_a_line_fed_in_parts_and_an_unfinished_one_at_the_end() -> None:
    lines = LineAssembler()
    assert lines.feed("[1,mpirank:0,algo-1]<stdout>:hel", ends=False) == []
    assert lines.feed("lo\n") == [Tagged(0, "stdout", "hello", "algo-1")]
    assert lines.feed("") == [] and lines.feed("mpirun noise") == []
    lines.feed("[1,1]<stderr>:no newline", ends=False)
    assert lines.flush() == [Tagged(1, "stderr", "no newline")]


def test_a_huge_line_keeps_its_last_characters_with_a_note() -> None:
    lines = LineAssembler()
    for _ in range(5):
        lines.feed("[1,0]<stdout>:" + "x" * MAX_LINE, ends=False)
    (line,) = lines.feed("[1,0]<stdout>:end")
    cut = 5 * MAX_LINE + 3 - MAX_LINE
    assert line.text == cut_note(cut) + ("x" * (MAX_LINE - 3) + "end")
