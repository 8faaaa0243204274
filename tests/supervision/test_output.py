"""mpirun's output: interleaved partial lines stay with their rank."""

from __future__ import annotations

from pathlib import Path


def test_output_pump_keeps_interleaved_partial_lines_with_their_rank(tmp_path: Path) -> None:
    """Seed 004's log, where ranks printing without a newline share physical lines.

    Open MPI 5 holds a rank's output until its newline, so a local run rarely shows this;
    Open MPI 4 in SageMaker's containers does, and the launcher uses the same assembler.
    """
    import io

    from smmpi.supervision.output import Output

    seed = (
        "[1,3]<stdout>:Data at rank 3 [1,2]<stdout>:Data at rank 2 [1,2]<stdout>:[0 1 2]\n"
        "[1,3]<stdout>:[0 1 2]\n"
        "[1,1]<stdout>:I received some data: [1,1]<stdout>:[0 1 2]\n"
        "--------------------------------------------------------------------------\n"
    )
    output = Output(4, tmp_path, ppn=2)
    echo = io.StringIO()
    output.pump(io.BytesIO(seed.encode()), echo)
    output.close()
    assert (tmp_path / "rank-2.log").read_text() == "Data at rank 2 [0 1 2]\n"
    assert (tmp_path / "rank-3.log").read_text() == "Data at rank 3 [0 1 2]\n"
    assert (tmp_path / "rank-1.log").read_text() == "I received some data: [0 1 2]\n"
    assert (tmp_path / "rank-0.log").read_text() == ""
    # echoed with the toolkit's tags, as SageMaker's log shows them
    assert "[1,mpirank:3,algo-2]<stdout>:Data at rank 3 [0 1 2]" in echo.getvalue()
    assert (tmp_path / "mpirun.log").read_text().startswith("-----")


def test_a_line_of_megabytes_is_kept_to_its_last_part_with_a_note(tmp_path: Path) -> None:
    """A rank that writes megabytes without a newline: Open MPI tags each chunk of it, all on
    one physical line. Its last MAX_LINE characters are echoed and logged, after a note of
    how many came before; characters and tags that straddle a read are kept whole."""
    import io

    from smmpi.mpi_lines import MAX_LINE, cut_note
    from smmpi.supervision.output import READ, Output

    chunk = "é[x]" * 1000  # 5000 bytes: two-byte characters and brackets across every read
    pieces = [f"[1,1]<stdout>:{chunk}{i}" for i in range(400)]
    pieces.insert(200, "[1,0]<stdout>:zero")  # another rank's chunk, mid-line
    raw = "".join(pieces) + "END\n[1,0]<stdout>: done\n" + "m" * (3 * MAX_LINE)
    assert len(raw.encode()) > 20 * READ
    full = "".join(f"{chunk}{i}" for i in range(400)) + "END"
    output = Output(2, tmp_path, ppn=2)
    echo = io.StringIO()
    output.pump(io.BytesIO(raw.encode()), echo)
    output.close()
    kept = cut_note(len(full) - MAX_LINE) + full[-MAX_LINE:]
    assert (tmp_path / "rank-1.log").read_text() == kept + "\n"
    assert (tmp_path / "rank-0.log").read_text() == "zero done\n"
    assert f"[1,mpirank:1,algo-1]<stdout>:{kept}\n" in echo.getvalue()
    # mpirun's own line, read in parts too
    own = cut_note(2 * MAX_LINE) + "m" * MAX_LINE + "\n"
    assert (tmp_path / "mpirun.log").read_text() == own
