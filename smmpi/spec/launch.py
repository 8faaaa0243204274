"""Custom mpirun options that would change the world or the launch: refused, with what to use.

The container's mpirun line (``sagemaker_training/mpi.py``) sets the world
itself: ``--host algo-1:n,...,algo-N:n -np N*n -map-by slot``, started over its
own ssh. An option in ``custom_mpi_options`` that sets the number of ranks, the
hosts, the placement of ranks on them, or the launcher and program, passes a dry
run and then fails on SageMaker (Open MPI 4.1: "not enough slots", "more
processes than the ppr can support", a launch agent that does not exist) or
runs another world than the one asked for. Options are matched as Open MPI
matches them: one or two dashes, ``--name=value`` too.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from smmpi.errors import BadInput

_WORLD = "ranks are instances x ppn: use -N/--instances and -n/--ppn"
_HOSTS = "the hosts are algo-1..algo-N, given by the container: use -N/--instances"
_PLACEMENT = "the container puts ppn ranks on each host in rank order (-map-by slot): use -n/--ppn"
_LAUNCH = "the container starts the ranks itself; its launcher and program are not options"
_PROGRAM = "ranks start in the code dir (/opt/ml/code) with the image's python: not an option"

#: Open MPI 4.1 mpirun options (without dashes) and why each is refused.
REFUSED_OPTIONS = {
    **dict.fromkeys(("np", "n", "c"), _WORLD),
    **dict.fromkeys(
        (
            "host",
            "H",
            "hosts",
            "hostfile",
            "machinefile",
            "default-hostfile",
            "add-host",
            "add-hostfile",
            "rankfile",
            "rf",
        ),
        _HOSTS,
    ),
    **dict.fromkeys(
        (
            "N",
            "npernode",
            "pernode",
            "npersocket",
            "ppr",
            "map-by",
            "mapby",
            "rank-by",
            "bynode",
            "byslot",
            "bysocket",
            "bycore",
            "byboard",
            "nolocal",
        ),
        _PLACEMENT,
    ),
    **dict.fromkeys(
        ("app", "launch-agent", "prefix", "noprefix", "am", "tune", "configfile"), _LAUNCH
    ),
    # The program is the script's name, found in the code dir mpirun starts in.
    **dict.fromkeys(("wdir", "wd", "path"), _PROGRAM),
}

#: MCA parameters (``-mca NAME VALUE``) that do the same as the options above.
REFUSED_MCA = {
    **dict.fromkeys(("orte_default_hostfile", "orte_default_dash_host"), _HOSTS),
    **dict.fromkeys(
        (
            "rmaps_base_mapping_policy",
            "rmaps_base_ranking_policy",
            "rmaps_base_n_pernode",
            "rmaps_base_n_persocket",
            "rmaps_ppr_n_pernode",
            "rmaps_base_no_schedule_local",
        ),
        _PLACEMENT,
    ),
    **dict.fromkeys(
        ("plm", "plm_rsh_agent", "orte_rsh_agent", "plm_rsh_args", "orte_launch_agent"),
        _LAUNCH,
    ),
}
_MCA_FLAGS = ("mca", "gmca")

#: How many values each Open MPI 4.1 mpirun option takes (``mpirun --help all``: ``<arg0>``,
#: ``<arg0> <arg1>``), and the toolkit's own ``--NCCL_DEBUG LEVEL``. Without them mpirun takes
#: the container's next argument as the value, and the job fails at start on SageMaker.
VALUE_COUNTS = {
    **dict.fromkeys(("mca", "gmca"), 2),
    **dict.fromkeys(
        (
            *("am", "app", "bind-to", "c", "np", "cf", "cartofile", "cpu-list", "cpu-set"),
            *("cpus-per-proc", "cpus-per-rank", "debugger", "default-hostfile", "H", "host"),
            *("hnp", "hostfile", "launch-agent", "machinefile", "map-by", "max-restarts"),
            *("max-vm-size", "N", "n", "npernode", "npersocket", "ompi-server"),
            *("output-filename", "path", "personality", "ppr", "prefix", "preload-files"),
            *("rank-by", "report-events", "report-pid", "report-uri", "rf", "rankfile"),
            *("stdin", "timeout", "tune", "wd", "wdir", "x", "xml-file", "xterm"),
            "NCCL_DEBUG",  # sagemaker_training's own option, read before mpirun's
        ),
        1,
    ),
}
#: A value may start with "-" only as a negative number does.
_NEGATIVE_RE = re.compile(r"-[0-9][0-9.]*")


def check_launch_options(argv: Sequence[str], shown: str) -> None:
    """Refuse an option that changes the world or the launch (``shown``: the user's text)."""
    for i, token in enumerate(argv):
        if not token.startswith("-"):
            continue
        name = token.lstrip("-").split("=", 1)[0]
        why = REFUSED_OPTIONS.get(name)
        if why is None and name in _MCA_FLAGS and i + 1 < len(argv):
            param = argv[i + 1]
            why = REFUSED_MCA.get(param)
            token = f"{token} {param}"
        if why is not None:
            raise BadInput(
                "mpi_options",
                shown,
                f"options that leave the world and launch to the container ({token}: {why})",
            )
    check_values(argv, shown)


def check_values(argv: Sequence[str], shown: str) -> None:
    """Refuse an option without its values (``-x`` last, ``-mca btl``, ``--bind-to -x A``):
    mpirun would take the container's next argument as the value, or fail at start."""
    i = 0
    while i < len(argv):
        token = argv[i]
        name, given = token.lstrip("-").partition("=")[::2]
        wanted = VALUE_COUNTS.get(name, 0) if token.startswith("-") else 0
        wanted -= 1 if given and wanted else 0
        values = argv[i + 1 : i + 1 + wanted]
        if len(values) < wanted or any(_is_option(v) for v in values):
            plural = "s" if wanted > 1 else ""
            raise BadInput(
                "mpi_options",
                shown,
                f"every mpirun option followed by its values ({token} takes {wanted} "
                f"value{plural}, e.g. {_EXAMPLES.get(name, token + ' VALUE')})",
            )
        i += 1 + wanted


def _is_option(value: str) -> bool:
    return value.startswith("-") and not _NEGATIVE_RE.fullmatch(value)


_EXAMPLES = {
    "x": "-x NAME=VALUE",
    "mca": "-mca btl_tcp_if_include eth0",
    "gmca": "-gmca btl_tcp_if_include eth0",
    "bind-to": "--bind-to core",
    "NCCL_DEBUG": "--NCCL_DEBUG WARN",
}
