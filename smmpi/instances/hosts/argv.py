"""The container's mpirun argv, as it runs on isolated hosts: three documented substitutions.

Everything else in the line runs as SageMaker's container runs it, flag for flag:
``--host algo-1:n,...``, ``-np``, the ``eth0`` interface MCA settings, ``-x`` forwarding.
``mpirun`` itself is found on PATH, as in the container (the MPI's bin folder comes first).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

AGENT_WHY = "Open MPI starts orted on algo-k through this agent, which enters algo-k's namespaces"
PYTHON_WHY = "this environment's Python, with mpi4py, in place of the image's"
SHIM_WHY = "the toolkit's gethostname shim: each instance's own UTS namespace answers algo-k"


@dataclass(frozen=True)
class Substitution:
    container: tuple[str, ...]
    local: tuple[str, ...]
    why: str


def _is_python(token: str) -> bool:
    name = token.rsplit("/", 1)[-1]
    return name.startswith("python") and name[6:].replace(".", "").isdigit()


def substitutions(
    container: Sequence[str], python: str | Sequence[str], agent: str | None
) -> list[Substitution]:
    """The only differences between the container's line and the one that runs here.

    ``python`` is the interpreter, or the words that start it (a wrapper, then it).
    ``agent`` None: exact mode, where mpirun reaches the instances through ssh and sshd.
    """
    interpreter = (python,) if isinstance(python, str) else tuple(python)
    subs = []
    if agent is not None:
        local = ("mpirun", "-mca", "plm_rsh_agent", agent)
        subs.append(Substitution(("mpirun",), local, AGENT_WHY))
    tokens = list(container)
    for i, token in enumerate(tokens):
        if token == "-x" and i + 1 < len(tokens) and tokens[i + 1].startswith("LD_PRELOAD="):
            subs.append(Substitution(("-x", tokens[i + 1]), (), SHIM_WHY))
        elif _is_python(token) and (i == 0 or tokens[i - 1] != "-x"):
            subs.append(Substitution((token,), interpreter, PYTHON_WHY))
            break  # the program and its arguments follow, unchanged
    return subs


def isolated_argv(
    container: Sequence[str], python: str | Sequence[str], agent: str | None
) -> list[str]:
    """``container`` with :func:`substitutions` applied, and nothing else changed."""
    tokens = list(container)
    if not tokens or tokens[0] != "mpirun":
        raise ValueError(f"not the container's mpirun line: {tokens[:1]}")
    out: list[str] = []
    subs = {s.container: s.local for s in substitutions(tokens, python, agent)}
    i = 0
    while i < len(tokens):
        pair = tuple(tokens[i : i + 2])
        if pair in subs and pair[0] == "-x":
            out += subs[pair]
            i += 2
            continue
        single = (tokens[i],)
        if single in subs and (i == 0 or tokens[i - 1] != "-x"):
            out += subs[single]
            if single != ("mpirun",):
                return out + tokens[i + 1 :]
        else:
            out.append(tokens[i])
        i += 1
    return out
