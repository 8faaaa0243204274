"""mpirun's output: interleaved partial lines stay with their rank."""

from __future__ import annotations

from pathlib import Path


def test_output_pump_keeps_interleaved_partial_lines_with_their_rank(tmp_path: Path) -> None:
    """Seed 004's log, where ranks printing without a newline share physical lines.

    Open MPI 5 holds a rank's output until its newline, so a local run rarely shows this;
    Open MPI 4 in SageMaker's containers does, and the launcher uses the same assembler.
    """
    import io

    from smmpi.runners.local.output import Output

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
