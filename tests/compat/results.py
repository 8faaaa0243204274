"""Per-rank results of a unittest run under MPI, read from tagged output (plain or smmpi)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from smmpi.mpi_output import LineAssembler

_RAN = re.compile(r"^Ran (?P<n>\d+) tests? in ")
_END = re.compile(r"^(?P<verdict>OK|FAILED)(?: \((?P<counts>[^)]*)\))?$")
_BAD = re.compile(r"^(?P<kind>ERROR|FAIL): (?P<name>\S+) \((?P<where>[\w.]+)\)")


@dataclass
class RankResult:
    ran: int = 0
    failures: int = 0
    errors: int = 0
    skipped: int = 0
    bad: set[str] = field(default_factory=set)  # "ERROR module.Class.test"
    win_errors: int = 0  # lines naming MPI_ERR_WIN

    @property
    def counts(self) -> tuple[int, int, int, int]:
        return self.ran, self.failures, self.errors, self.skipped


def per_rank(lines: Iterable[str]) -> dict[int, RankResult]:
    """Each rank's tests run, failures, errors and skips, and which tests went wrong."""
    results: dict[int, RankResult] = {}
    assembler = LineAssembler()
    tagged = [t for line in lines for t in assembler.feed(line)] + assembler.flush()
    for t in tagged:
        r = results.setdefault(t.rank, RankResult())
        text = t.text.strip()
        if "MPI_ERR_WIN" in text:
            r.win_errors += 1
        if m := _RAN.match(text):
            r.ran = int(m["n"])
        elif m := _END.match(text):
            counts = dict(
                (k.strip(), int(v))
                for k, v in (c.split("=") for c in (m["counts"] or "").split(",") if "=" in c)
            )
            r.failures, r.errors = counts.get("failures", 0), counts.get("errors", 0)
            r.skipped = counts.get("skipped", 0)
        elif m := _BAD.match(text):
            where = m["where"]
            name = where if where.endswith(m["name"]) else f"{where}.{m['name']}"
            r.bad.add(f"{m['kind']} {name}")
    return results


#: A daemon's message that Open MPI printed inside a rank's unfinished line
#: (``[algo-1:1398102] 24 more processes have sent help message ...``), up to the next tag.
_DAEMON_RE = re.compile(r"\[[\w.-]+:\d+\] .*?(?=\[\d+,(?:mpirank:)?\d+[^\]]*\]<std|$)")
#: One test of unittest's verbose output: ``testX (module.Class.testX) ... ok``; a test with
#: a docstring prints its first line between, and the outcome may start a line of its own.
_OUTCOME_RE = re.compile(
    r"\((?P<test>test_\w+(?:\.\w+)+)\)(?:\n[^\n]*?)? \.\.\. \n?"
    r"(?P<outcome>ok|skipped|ERROR|FAIL|expected failure|unexpected success)",
)


def outcomes(lines: Iterable[str]) -> dict[int, dict[str, str]]:
    """Each rank's test ids and their outcomes, from ``-v`` output (tagged, plain or smmpi)."""
    assembler = LineAssembler()
    text: dict[int, list[str]] = {}
    for line in lines:
        for t in assembler.feed(_DAEMON_RE.sub("", line)):
            if t.stream == "stderr":
                text.setdefault(t.rank, []).append(t.text)
    for t in assembler.flush():
        if t.stream == "stderr":
            text.setdefault(t.rank, []).append(t.text)
    return {
        rank: {m["test"]: m["outcome"] for m in _OUTCOME_RE.finditer("\n".join(chunks))}
        for rank, chunks in text.items()
    }
