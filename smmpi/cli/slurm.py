"""``smmpi slurm up|down|status``: a real SLURM of emulated nodes on this machine."""

from __future__ import annotations

import sys

import click

from smmpi.cli.options import AsciiInt

LOCAL_PROFILE = "local"


@click.group("slurm")
def slurm_group() -> None:
    """Start, stop or describe a real SLURM cluster here (munged, slurmctld, one slurmd per
    node, each node an isolated host), to try a job before queueing on a real cluster."""


@slurm_group.command("up")
@click.option("--nodes", type=AsciiInt("--nodes"), default=3, show_default=True)
@click.option("--cpus", type=AsciiInt("--cpus"), default=2, show_default=True, help="Per node.")
def slurm_up_cmd(nodes: int, cpus: int) -> None:
    """Start the cluster (clearing what a killed one left) and save profile `local`."""
    from smmpi.instances.slurmcluster import cluster, layout
    from smmpi.runners.slurm import commands, profile

    state = cluster.up(nodes, cpus)
    shared = str(state.folder / "shared")
    bin_dir = str(state.folder / "bin")
    # the launch is asked once here, not at every submit (`srun --mpi=list`)
    pmix = commands.offers_pmix(profile.Profile(LOCAL_PROFILE, bin=bin_dir))
    launch = "srun" if pmix else "mpirun"
    # a followed job's end is seen as slurmctld writes it to the jobcomp file
    jobcomp = layout.Shape(state.folder, state.nodes, state.cpus).jobcomp
    settings = {"bin": bin_dir, "workdir": shared, "launch": launch, "jobcomp": jobcomp}
    profile.save(LOCAL_PROFILE, settings)
    click.echo(
        f"SLURM cluster up: {state.nodes} nodes x {state.cpus} CPUs, partition "
        f"{layout.PARTITION}, in {state.folder}"
    )
    click.echo(f"profile `{LOCAL_PROFILE}` saved: submit with --backend slurm --profile local")
    click.echo(f"SLURM's commands here: export PATH={bin_dir}:$PATH")


@slurm_group.command("down")
def slurm_down_cmd() -> None:
    """Stop the cluster: no daemon, namespace, link or mount of it is left."""
    from smmpi.instances.slurmcluster import cluster

    was_up = cluster.down()
    click.echo("SLURM cluster stopped" if was_up else "no SLURM cluster was up")


@slurm_group.command("status")
def slurm_status_cmd() -> None:
    """Whether the cluster is up, and its nodes (exit 1 when it is down)."""
    from smmpi.instances.slurmcluster import cluster

    state = cluster.status()
    if not state.up:
        click.echo(f"SLURM cluster down ({state.folder})")
        sys.exit(1)
    click.echo(f"SLURM cluster up: {state.nodes} nodes x {state.cpus} CPUs in {state.folder}")
    click.echo(state.sinfo)
