"""Tagged MPI output: rebuild each rank's lines from ``[1,r]<stdout>:`` output, find who failed.

One parser for local runs and for SageMaker's CloudWatch streams
(:class:`LineAssembler`, from :mod:`smmpi.mpi_lines`, and :class:`FailureScan`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from smmpi.causes import say, signalled
from smmpi.mpi_lines import LineAssembler, Tagged, is_tagged, split_tags

__all__ = [
    "FailureScan",
    "LineAssembler",
    "Pitfall",
    "Tagged",
    "is_tagged",
    "printable",
    "split_tags",
]

_ABORT_RE = re.compile(r"MPI_ABORT was invoked on rank (?P<rank>\d+) in communicator")
_ERRORCODE_RE = re.compile(r"^\s*(?:Errorcode: |with errorcode )(?P<code>-?\d+)")  # OMPI 5, 4
# mpirun's note on the first process that ended with a non-zero status (when no rank record
# says so: exact mode, where the toolkit, not smmpi, builds the line):
#   "  Process name: [[62834,1],1]" then "  Exit code:    137"
_PROCESS_RE = re.compile(r"\s*Process name:\s*\[\[\d+,\d+\],(?P<rank>\d+)\]")
_EXIT_CODE_RE = re.compile(r"\s*Exit code:\s*(?P<code>\d+)\s*$")
_EXIT_RE = re.compile(
    r"(?:process rank|rank) (?P<rank>\d+) with PID \d+ on node \S+ exited on\s+signal (?P<sig>\d+)"
)
_EXC_RE = re.compile(
    r"^(?P<name>[A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Warning)?)"
    r"(?::\s?(?P<msg>.*))?$"
)


@dataclass(frozen=True)
class Pitfall:
    """A known failure: a pattern in a run's output (any line, tagged or not), its cause and fix.

    ``stops``: a run that shows it cannot go on (mpirun may hang rather than end it).
    ``cause`` may name ``{context}`` fields the reader fills in (the run's folder, ...).
    """

    key: str
    pattern: re.Pattern[str]
    cause: str
    fix: str = ""
    stops: bool = False

    @property
    def note(self) -> str:
        return f"{self.cause}; {self.fix}" if self.fix else self.cause

    def note_for(self, groups: Mapping[str, str | None]) -> str:
        """The note with the matched text's groups filled in (``{alias}``)."""
        if not self.pattern.groupindex:
            return self.note
        return self.note.format_map({k: v or "" for k, v in groups.items()})

    @classmethod
    def rows(cls, table: Iterable[Mapping[str, Any]]) -> tuple[Pitfall, ...]:
        """Pitfalls from a table's rows (``key``, ``pattern``, ``cause``, ``fix``, ``stops``),
        as a JSON file holds them."""
        return tuple(
            cls(
                str(row["key"]),
                re.compile(str(row["pattern"])),
                str(row["cause"]),
                str(row.get("fix", "")),
                bool(row.get("stops", False)),
            )
            for row in table
        )


#: The failures named from the output alone, first match first. A row's cause and fix
#: may name the pattern's groups (``{alias}``): the matched text fills them in.
PITFALLS: tuple[Pitfall, ...] = (
    Pitfall(
        "no-room",
        re.compile(r"PMIX ERROR: OUT-OF-RESOURCE in file \S*(?:/dstore|/pmix_client\.c)"),
        "Open MPI could not create its session files: their folder is too small or full",
        "set TMPDIR to a folder with more room",
        stops=True,
    ),
    Pitfall(
        "not-enough-slots",
        re.compile(r"There are not enough slots available in the system"),
        "Open MPI started every rank on the first host: an Open MPI launcher setting in the "
        "job's environment (OMPI_MCA_plm=isolated, say) overrides the container's --host list",
        "leave OMPI_MCA_plm and the other launcher settings out of the job's environment (--env)",
    ),
    Pitfall(
        "no-rsh-agent",
        re.compile(r'MCA parameter "plm_rsh_agent" was set to a path'),
        "Open MPI found no ssh or rsh to start its daemons with",
        "install openssh-client (apt-get install openssh-client)",
    ),
    Pitfall(
        "model-dir",
        re.compile(r"error: unrecognized arguments:.*--model_dir"),
        "the TensorFlow estimator (the default framework) adds --model_dir /opt/ml/model "
        "to the program's arguments, and the program's argparse refuses it",
        "parse with parse_known_args(), accept --model_dir, or use --framework pytorch",
    ),
    Pitfall(
        "win-thread-multiple",
        re.compile(r"MPI_ERR_WIN|osc pt2pt\b.*MPI_THREAD_MULTIPLE", re.IGNORECASE),
        "the container's mpirun sets -mca btl_vader_single_copy_mechanism none, which leaves "
        "Open MPI only its pt2pt one-sided component, and that refuses mpi4py's default "
        "thread level MPI_THREAD_MULTIPLE",
        "set MPI4PY_RC_THREAD_LEVEL=serialized in the job's environment (submit --env "
        "MPI4PY_RC_THREAD_LEVEL=serialized; here, export it and add --pass-env "
        'MPI4PY_RC_THREAD_LEVEL), or mpi4py.rc.thread_level = "serialized" before importing '
        "mpi4py.MPI",
    ),
    Pitfall(
        "no-free-slots",
        re.compile(r"MPI_ERR_SPAWN|All nodes which are allocated for this job are already filled"),
        "dynamic processes have no free slots, as on SageMaker: the container's mpirun "
        "gives every slot (--host algo-k:n) to a rank",
        "run the workers as ranks instead (more processes per instance or more instances), "
        "not with Spawn",
    ),
    Pitfall(
        "numpy-alias",
        re.compile(
            r"module 'numpy' has no attribute '(?P<alias>float|int|bool|object|str|complex)'"
        ),
        "np.{alias} was removed in NumPy 1.24 (an alias of the builtin {alias}), "
        "and the image's NumPy is newer",
        "replace np.{alias} with {alias} (or a sized NumPy type, such as np.float64 for np.float)",
    ),
)


#: Hangs named from where the ranks are at a timeout: a row's pattern is matched against the
#: source line of each rank's innermost frame, and it is named when ranks on more than one
#: instance are there.
HANG_PITFALLS: tuple[Pitfall, ...] = (
    Pitfall(
        "mpi-io-own-folder",
        re.compile(r"\bFile\.Open\("),
        "every instance has its own /tmp (each container does), but Open MPI's MPI-IO opens a "
        "file collectively as if every rank saw it: the ranks of the other instances cannot "
        "open the file that rank 0 created, and the others wait for them for ever",
        "open a file that several instances share on a file system they all mount (FSx for "
        "Lustre, EFS), or one file per instance or rank (MPI.COMM_SELF, or "
        "comm.Split_type(MPI.COMM_TYPE_SHARED))",
    ),
)


@dataclass
class FailureScan:
    """Reads a run's output as it goes and names the rank that failed, and why.

    ``pitfalls``: known failures to look for (:data:`PITFALLS`); ``found`` lists
    those seen, in the order they first appeared.
    """

    pitfalls: tuple[Pitfall, ...] = PITFALLS
    found: list[Pitfall] = field(default_factory=list)
    groups: dict[str, dict[str, str | None]] = field(default_factory=dict)  # key -> match's
    exceptions: dict[int, str] = field(default_factory=dict)
    order: list[int] = field(default_factory=list)
    aborted_rank: int | None = None
    abort_code: int | None = None
    signalled: dict[int, int] = field(default_factory=dict)
    exited: dict[int, int] = field(default_factory=dict)  # mpirun's "first process to do so"
    _process: int | None = None  # the rank of mpirun's last "Process name:" line
    hosts: dict[int, str] = field(default_factory=dict)  # rank -> host, when tags name it
    _in_traceback: dict[int, bool] = field(default_factory=dict)

    _lines: LineAssembler = field(default_factory=LineAssembler, repr=False)

    def feed(self, line: str) -> None:
        """One physical line of mpirun's output, tagged or not."""
        if is_tagged(line):
            for tagged in self._lines.feed(line):
                self.feed_tagged(tagged)
        else:
            self.feed_untagged(line)

    def _look_for_pitfalls(self, text: str) -> None:
        for pitfall in self.pitfalls:
            if pitfall in self.found:
                continue
            match = pitfall.pattern.search(text)
            if match:
                self.found.append(pitfall)
                self.groups[pitfall.key] = match.groupdict()

    def note(self, pitfall: Pitfall) -> str:
        """``pitfall``'s cause and fix, with what this run's output filled in."""
        return pitfall.note_for(self.groups.get(pitfall.key, {}))

    @property
    def stops(self) -> Pitfall | None:
        """A pitfall seen after which the run cannot go on."""
        return next((p for p in self.found if p.stops), None)

    def feed_untagged(self, text: str) -> None:
        """A line of mpirun's own (or the container toolkit's)."""
        text = text.rstrip("\n")
        self._look_for_pitfalls(text)
        m = _ABORT_RE.search(text)
        if m and self.aborted_rank is None:
            self.aborted_rank = int(m["rank"])
        m = _ERRORCODE_RE.match(text)
        if m and self.abort_code is None and self.aborted_rank is not None:
            self.abort_code = int(m["code"])
        m = _EXIT_RE.search(text)
        if m:
            self.signalled.setdefault(int(m["rank"]), int(m["sig"]))
        m = _PROCESS_RE.match(text)
        if m:
            self._process = int(m["rank"])
        m = _EXIT_CODE_RE.match(text)
        if m and self._process is not None:
            self.exited.setdefault(self._process, int(m["code"]))
            self._process = None

    def feed_tagged(self, tagged: Tagged) -> None:
        """One whole line a rank wrote (as :class:`LineAssembler` rebuilds them)."""
        if tagged.host:
            self.hosts.setdefault(tagged.rank, tagged.host)
        self.feed_untagged(tagged.text)  # Open MPI 5 tags its abort notice with the rank
        if tagged.stream == "stdout":
            return
        rank, text = tagged.rank, tagged.text
        if text.startswith("Traceback (most recent call last):"):
            self._in_traceback[rank] = True
            return
        if self._in_traceback.get(rank):
            if text.startswith((" ", "\t")) or not text:
                return
            if _EXC_RE.match(text):
                self.exceptions[rank] = text.strip()
                if rank not in self.order:
                    self.order.append(rank)
                self._in_traceback[rank] = False

    def failed_rank(self) -> int | None:
        """The rank to blame: the one that raised first, else the one that called abort."""
        if self.order:
            if self.aborted_rank is not None and self.aborted_rank in self.exceptions:
                return self.aborted_rank
            return self.order[0]
        if self.aborted_rank is not None:
            return self.aborted_rank
        if self.signalled:
            return min(self.signalled)
        return next(iter(self.exited), None)

    def phrase(self, rank: int) -> str:
        """What the output tells of ``rank``'s failure, in the words of :mod:`smmpi.causes`."""
        if rank in self.exceptions:
            return say("exception", text=self.exceptions[rank])
        if rank == self.aborted_rank and self.abort_code is not None:
            code = self.abort_code
            return say("mpi-abort-zero") if code == 0 else say("mpi-abort", code=code)
        if rank in self.signalled:
            return signalled(self.signalled[rank])
        if rank in self.exited:
            return say("exit-code", code=self.exited[rank])
        return say("abnormal")

    def reason(self, rank: int) -> str:
        return self.phrase(rank).removeprefix("failed: ")


_UNPRINTABLE_RE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\udc80-\udcff]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code - 0xDC00 if code >= 0xDC80 else code:02x}"


def printable(text: str) -> str:
    """``text`` safe to show on a terminal: control characters (NUL, the ESC of ANSI/OSC
    sequences, carriage return, C1 codes) and undecodable bytes become ``\\xNN``."""
    return _UNPRINTABLE_RE.sub(_escape, text)
