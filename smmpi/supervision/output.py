"""mpirun's output: echoed with SageMaker's tags, split into per-rank logs, scanned for failures."""

from __future__ import annotations

import codecs
import io
import threading
from collections.abc import Callable, Iterator, Mapping
from functools import partial
from pathlib import Path
from typing import IO

from smmpi.bounded import create
from smmpi.mpi_lines import MAX_LINE, cut_note
from smmpi.mpi_output import FailureScan, LineAssembler, Tagged, is_tagged, printable
from smmpi.toolkit.failure import Capture, error_classes
from smmpi.toolkit.hosts import host_of_rank
from smmpi.toolkit.shape import JobShape
from smmpi.toolkit.tags import container_tag

READ = 64 * 1024  # bytes of mpirun's output read at a time (a line may be far longer)
TAG_MAX = 256  # bytes held back at a part's end, from its last "[": a tag is not cut in two


def parts(stream: IO[bytes]) -> Iterator[tuple[str, bool]]:
    """mpirun's physical lines as (text, ends the line), a long line in parts of about
    :data:`READ` bytes (no tag and no UTF-8 character cut in two)."""
    decoder = codecs.getincrementaldecoder("utf-8")("surrogateescape")
    carry, open_line = "", False
    for raw in iter(partial(stream.readline, READ), b""):
        text = carry + decoder.decode(raw)
        if text.endswith("\n"):
            carry, open_line = "", False
            yield text.rstrip("\r\n"), True
            continue
        cut = text.rfind("[", max(0, len(text) - TAG_MAX))
        cut = len(text) if cut < 0 else cut
        carry = text[cut:]
        if cut:
            open_line = True
            yield text[:cut], False
    rest = carry + decoder.decode(b"", final=True)
    if rest or open_line:  # the last line had no newline
        yield rest.rstrip("\r\n"), True


class _OwnLine:
    """mpirun's own (untagged) line, read in parts: its last :data:`MAX_LINE` characters."""

    def __init__(self) -> None:
        self.text, self.cut, self.open = "", 0, False

    def add(self, text: str, ends: bool) -> str | None:
        """The whole line once ``ends`` (with a note if its start was cut), else None."""
        text = self.text + text
        if len(text) > MAX_LINE:
            self.cut += len(text) - MAX_LINE
            text = text[-MAX_LINE:]
        self.text, self.open = ("", False) if ends else (text, True)
        if not ends:
            return None
        line = cut_note(self.cut) + text if self.cut else text
        self.cut = 0
        return line


def _raw_log(path: Path) -> IO[str]:
    """A log file that keeps the bytes ranks wrote (text read with ``surrogateescape``),
    created without following a link (a planted ``rank-0.log`` link is refused)."""
    return io.TextIOWrapper(create(path, "log_dir"), encoding="utf-8", errors="surrogateescape")


class Output:
    """Echo mpirun's output (tags as in SageMaker's log), demux it per rank, scan for failures.

    What is echoed has its control characters escaped (:func:`printable`), so
    a rank cannot write NUL or terminal escape sequences to the screen; the
    log files keep the bytes as the ranks wrote them.

    Each rank's lines are rebuilt by :class:`LineAssembler`, as ``smmpi logs``
    does for CloudWatch, so a rank that prints without a newline never lends
    its words to another rank's line or log file. mpirun's output is read in parts
    (:func:`parts`), and a line is kept to its last ``MAX_LINE`` characters: a rank that
    writes 100 MB without a newline is shown, and named, at once.
    """

    def __init__(
        self,
        world_size: int,
        log_dir: Path | None,
        ppn: int = 1,
        image: str = "",
        retag: bool = True,
    ) -> None:
        self.ppn = ppn  # the toolkit's tag names algo-(rank // ppn + 1)
        self.retag = retag  # False: mpirun's own tags, as where no toolkit reads its output
        self.scan = FailureScan()
        # what the container's toolkit keeps of each pipe for algo-1's output/failure
        self.captures = {pipe: Capture(error_classes(image)) for pipe in ("stdout", "stderr")}
        self.lock = threading.Lock()
        self.files: dict[int, IO[str]] = {}
        self.untagged: IO[str] | None = None
        if log_dir is not None:
            log_dir.mkdir(parents=True, exist_ok=True)
            try:
                self.untagged = _raw_log(log_dir / "mpirun.log")
                for rank in range(world_size):  # one file per rank, even a silent one
                    self.files[rank] = _raw_log(log_dir / f"rank-{rank}.log")
            except BaseException:  # a link planted since the check: nothing is left open
                self.close()
                raise

    def _emit(self, tagged: Tagged, echo: IO[str]) -> None:
        self.scan.feed_tagged(tagged)
        tag = f"[1,{tagged.rank}]<{tagged.stream}>:"
        if self.retag:
            tag = container_tag(tagged.rank, tagged.stream, self.ppn)
        echo.write(printable(f"{tag}{tagged.text}") + "\n")
        f = self.files.get(tagged.rank)
        if f is not None:
            f.write(tagged.text + "\n")

    def pump(
        self, stream: IO[bytes], echo: IO[str], own: IO[str] | None = None, pipe: str = ""
    ) -> None:
        """Echo ``stream``: the ranks' lines to ``echo``, mpirun's own (untagged) to ``own``.

        ``pipe`` (``stdout`` or ``stderr``) names mpirun's pipe for the toolkit's capture.
        """
        own = own or echo
        lines = LineAssembler()  # one per pipe: stdout and stderr interleave independently
        untagged = _OwnLine()
        capture = self.captures.get(pipe)
        for text, ends in parts(stream):
            if capture is not None and ends:
                capture.feed(text)  # (a line read in parts: its last part)
            with self.lock:
                if lines.open is not None or (not untagged.open and is_tagged(text)):
                    for tagged in lines.feed(text, ends):
                        self._emit(tagged, echo)
                else:
                    line = untagged.add(text, ends)
                    if line is not None:
                        self._own(line, own)
                echo.flush()
        with self.lock:
            for tagged in lines.flush():
                self._emit(tagged, echo)
            echo.flush()

    def _own(self, line: str, own: IO[str]) -> None:
        self.scan.feed_untagged(line)
        own.write(printable(line) + "\n")
        own.flush()
        if self.untagged is not None:
            self.untagged.write(line + "\n")

    def close(self) -> None:
        for f in self.files.values():
            f.close()
        if self.untagged is not None:
            self.untagged.close()


_LAUNCH_FRAMES = ("<frozen runpy>", "/mpi4py/run.py", "/mpi4py/__main__.py")


def _user_frames(stack: str) -> str:
    """A faulthandler dump without the frames of ``python -m mpi4py`` itself."""
    return "\n".join(
        line
        for line in stack.rstrip().splitlines()
        if not any(marker in line for marker in _LAUNCH_FRAMES)
    )


def report_stacks(
    reason: str,
    stacks: Mapping[int, str],
    shape: JobShape,
    progress: Callable[[str], None],
    notes: Mapping[int, str] | None = None,
) -> None:
    """Every rank's Python stack (a run that timed out), each under its rank and host;
    ``notes``: why a rank has none (from the run's records)."""
    progress(f"smmpi: {reason}; Python stack of every rank:")
    for rank in range(shape.world_size):
        host = host_of_rank(rank, shape.ppn, shape.instances)
        stack = stacks.get(rank)
        progress(f"--- rank {rank} ({host}) ---")
        why = (notes or {}).get(rank, "the rank had not started Python or had already exited")
        progress(printable(_user_frames(stack)) if stack else f"(no stack: {printable(why)})")
