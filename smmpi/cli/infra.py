"""``smmpi infra deploy|show|delete`` (the CloudFormation stack) and ``smmpi doctor``."""

from __future__ import annotations

import sys

import click

from smmpi.cli.options import AsciiInt, region_option


@click.group("infra")
def infra_group() -> None:
    """Deploy, show or delete smmpi's CloudFormation stack (execution role + bucket)."""


@infra_group.command("deploy")
@click.option("--stack-name", default="smmpi", show_default=True)
@click.option("--vpc-id", default=None, help="Also create a security group in this VPC.")
@click.option("--subnet", "subnets", multiple=True, help="Subnet for jobs (with --vpc-id).")
@click.option(
    "--retention-days",
    type=AsciiInt("retention days"),
    default=None,
    help="Delete job data older than this (template default: 90).",
)
@region_option
def infra_deploy_cmd(
    stack_name: str,
    vpc_id: str | None,
    subnets: tuple[str, ...],
    retention_days: int | None,
    region: str | None,
) -> None:
    """Create or update the stack and save its role and bucket in smmpi's config."""
    from smmpi.aws.clients import clients
    from smmpi.ops import infra

    infra.check_inputs(stack_name, vpc_id, list(subnets), retention_days)
    (cfn,) = clients("cloudformation", region=region)
    outputs = infra.deploy(
        cfn,
        stack_name,
        vpc_id=vpc_id,
        retention_days=retention_days,
        progress=lambda msg: click.echo(msg, err=True),
    )
    saved = infra.save_outputs(
        outputs, region=cfn.meta.region_name, stack=stack_name, subnets=list(subnets)
    )
    for key, value in sorted(outputs.items()):
        click.echo(f"{key}: {value}")
    click.echo(f"saved role and bucket to {saved}")


@infra_group.command("show")
@click.option("--stack-name", default="smmpi", show_default=True)
@region_option
def infra_show_cmd(stack_name: str, region: str | None) -> None:
    """Show the stack's state and outputs, and what smmpi's config holds."""
    from smmpi import config
    from smmpi.aws.clients import clients
    from smmpi.ops import infra

    infra.check_inputs(stack_name)
    (cfn,) = clients("cloudformation", region=region)
    state, outputs = infra.show(cfn, stack_name)
    click.echo(f"stack: {stack_name} ({state}) in {cfn.meta.region_name}")
    for key, value in sorted(outputs.items()):
        click.echo(f"{key}: {value}")
    saved = config.load()
    click.echo(
        f"config: {config.path()}: role={saved.get('role', '-')} bucket={saved.get('bucket', '-')}"
    )


@infra_group.command("delete")
@click.option("--stack-name", default="smmpi", show_default=True)
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@region_option
def infra_delete_cmd(stack_name: str, yes: bool, region: str | None) -> None:
    """Delete the stack (the bucket and its job data are kept) and forget its outputs."""
    from smmpi.aws.clients import clients
    from smmpi.ops import infra

    infra.check_inputs(stack_name)
    if not yes and not _interactive():
        raise click.UsageError(
            f"deleting stack {stack_name} needs a confirmation and there is no terminal "
            "to ask on: pass --yes"
        )
    (cfn,) = clients("cloudformation", region=region)
    if not yes and not click.confirm(f"Delete stack {stack_name} in {cfn.meta.region_name}?"):
        click.echo(f"smmpi: stack {stack_name} not deleted", err=True)
        sys.exit(1)
    kept = infra.delete(cfn, stack_name, progress=lambda msg: click.echo(msg, err=True))
    click.echo(f"deleted stack {stack_name}")
    if kept:
        logs = f", and bucket {kept[1]} with its access logs" if len(kept) > 1 else ""
        click.echo(
            f"bucket {kept[0]} was kept with its job data{logs}; when no longer needed, "
            "delete every object version, then the bucket"
        )


def _interactive() -> bool:
    """Someone to ask: a terminal, or a pipe with an answer in it (not closed, not at its end)."""
    stdin = sys.stdin
    try:
        if stdin is None or stdin.closed:
            return False
        if stdin.isatty():
            return True
        peek = getattr(getattr(stdin, "buffer", None), "peek", None)
        return bool(peek(1)) if peek is not None else True
    except (OSError, ValueError):
        return False


@click.command("doctor")
@click.option("--no-smoke", is_flag=True, help="Skip the 2-rank mpirun smoke run.")
@region_option
def doctor_cmd(no_smoke: bool, region: str | None) -> None:
    """Check MPI, AWS credentials/region/endpoint, role and bucket; one line each with a fix."""
    from smmpi import doctor
    from smmpi.aws.clients import resolve_region

    resolve_region(region)  # a malformed region or config file is one line, exit 2
    checks = doctor.run(smoke=not no_smoke, region=region)
    for check in checks:
        click.echo(check.line())
    sys.exit(0 if all(c.state != "fail" for c in checks) else 1)
