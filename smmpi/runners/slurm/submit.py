"""A job to SLURM: its batch script, the cluster's checks, then ``sbatch --parsable``.

Every check runs before anything is created: the partition is one the cluster has, the
nodes and tasks fit it (``sinfo``), and SLURM itself would accept the request
(``sbatch --test-only``). Only then is the job folder made on the shared filesystem, with
the code package and the script in it, and the job submitted from there.
"""

from __future__ import annotations

import os
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from smmpi.archives import pack
from smmpi.bounded import copy_regular, create
from smmpi.errors import BadInput
from smmpi.runners.slurm import commands, script
from smmpi.runners.slurm.profile import Profile
from smmpi.spec import MPIJob
from smmpi.supervision import rank_hook

SCRIPT = "job.sbatch"


@dataclass(frozen=True)
class Submitted:
    job_id: str
    job_name: str
    job_dir: str


def job_name(job: MPIJob) -> str:
    """The job's name, or ``smmpi-ENTRY-DATE`` as the SDK would name it."""
    if job.job_name:
        return job.job_name
    stamp = time.strftime("%Y-%m-%d-%H-%M-%S", time.gmtime())
    base = job.base_job_name or f"smmpi-{job.program.name}"
    return f"{base}-{stamp}-{int(time.time() * 1000) % 1000:03d}"


def batch(job: MPIJob, profile: Profile, name: str) -> script.Batch:
    """The job's batch, with the profile's lines and the launch the cluster offers."""
    launch = profile.launch
    if launch == "auto":
        launch = "srun" if commands.offers_pmix(profile) else "mpirun"
    return script.from_job(
        job,
        name,
        os.path.join(profile.workdir, name),
        launch=launch,
        time=profile.time,
        partition=profile.partition,
        account=profile.account,
        modules=profile.modules,
        activate=profile.activate,
        extra=profile.sbatch,
    )


def _partitions(profile: Profile) -> dict[str, tuple[int, int]]:
    """Each partition -> (nodes, CPUs of its smallest node), from ``sinfo``."""
    out = commands.checked(profile, ["sinfo", "--noheader", "--format=%P %D %c"])
    found: dict[str, tuple[int, int]] = {}
    for line in out.splitlines():
        words = line.split()
        if len(words) == 3 and words[1].isdigit():
            name = words[0].rstrip("*")
            nodes, cpus = found.get(name, (0, 1 << 30))
            found[name] = (nodes + int(words[1]), min(cpus, int(words[2].rstrip("+") or 0)))
            if words[0].endswith("*"):
                found.setdefault("", found[name])
    return found


def check(b: script.Batch, profile: Profile) -> None:
    """The cluster's answer to the request, before anything is created: ``sinfo`` and
    ``sbatch --test-only`` are asked at once (neither creates anything); sinfo's answer, the
    plainer one, is said first."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        tested = pool.submit(
            commands.run, profile, ["sbatch", "--test-only"], stdin=script.render(b)
        )
        _check_shape(b, _partitions(profile))  # on a refusal, the pool still waits for sbatch
        test = tested.result()
    if test.code != 0:
        raise BadInput("job (sbatch --test-only)", b.job_name, f"what SLURM accepts: {test.line}")


def _check_shape(b: script.Batch, partitions: dict[str, tuple[int, int]]) -> None:
    """The partition is one the cluster has, and the nodes and tasks fit it."""
    named = sorted(p for p in partitions if p)
    key = b.partition or ""
    if key not in partitions:
        raise BadInput("partition", b.partition or "(the default)", ", ".join(named) or "none")
    nodes, cpus = partitions[key]
    where = f"partition {b.partition}" if b.partition else "the default partition"
    if b.nodes > nodes:
        raise BadInput("instances", b.nodes, f"at most {nodes} (the nodes of {where})")
    if b.tasks_per_node * b.cpus_per_task > cpus:
        raise BadInput("ppn", b.tasks_per_node, f"at most {cpus} (the CPUs of a node of {where})")


def _stage(job: MPIJob, b: script.Batch, profile: Profile) -> Path:
    """The job folder, new, with the code package and the script."""
    Path(profile.workdir).mkdir(parents=True, exist_ok=True)
    folder = Path(b.job_dir)
    try:
        folder.mkdir(mode=0o755)
    except FileExistsError:
        raise BadInput(
            "job_name", b.job_name, f"a name with no folder in {profile.workdir}"
        ) from None
    with create(folder / script.PACKAGE, "code package", 0o644) as f:
        f.write(pack(job.program.files()))
    (folder / script.SITE).mkdir()
    copy_regular(
        rank_hook.__file__, folder / script.SITE / "sitecustomize.py", "rank hook", 1 << 20
    )
    with create(folder / SCRIPT, "batch script", 0o644) as f:
        f.write(script.render(b).encode())
    return folder


def submit(job: MPIJob, profile: Profile) -> Submitted:
    """Check, stage and ``sbatch --parsable``: the job's id."""
    name = job_name(job)
    b = batch(job, profile, name)
    check(b, profile)
    folder = _stage(job, b, profile)
    out = commands.checked(profile, ["sbatch", "--parsable", SCRIPT], cwd=str(folder))
    job_id = out.strip().split(";")[0]
    return Submitted(job_id, name, str(folder))
