"""What ``submit --dry-run`` prints: a summary, the container's mpirun, the local one, the cost."""

from __future__ import annotations

import json
import shlex
import sys
from collections.abc import Mapping
from typing import Any

from smmpi.runners.plan import Plan
from smmpi.spec import MPIJob


def plan_channels(request: Mapping[str, Any]) -> dict[str, str]:
    """Input channel name -> S3 URI, as the request carries them."""
    out: dict[str, str] = {}
    for channel in request.get("InputDataConfig") or []:
        source = channel.get("DataSource", {}).get("S3DataSource", {})
        out[str(channel["ChannelName"])] = str(source.get("S3Uri", "?"))
    return out


def local_mode() -> str:
    """The isolation ``submit --local`` would use here (``auto`` resolved on this machine)."""
    from smmpi.runners.local.modes import choose

    return choose(None)[0]


_HEADER = {
    "hosts": "The same line here (`submit --local`, isolated hosts, Open MPI 4.1): it runs as "
    "it stands, but for these substitutions:",
    "processes": "The same line here (`submit --local`, processes mode, Open MPI 4.1, one app "
    "context per emulated host):",
}


def _side_by_side(container: list[str], mode: str) -> list[str]:
    """Each part of the container's line, what it becomes locally, and why (SM_* as one row)."""
    from smmpi.runners.local.translate import Row, table

    rows: list[Row] = []
    translated = table(container, sys.executable, mode)
    sm = [r for r in translated if r.container[:1] == ("-x",) and r.container[1].startswith("SM_")]
    for row in translated:
        if row in sm:
            if row is sm[0]:
                rows.append(
                    Row((f"-x SM_... ({len(sm)} variables)",), ("SM_...=<per host>",), row.why)
                )
            continue
        rows.append(row)
    width = min(44, max(len(" ".join(r.container)) for r in rows))
    out = [f"  {'container':<{width}}  {'local':<36}  why"]
    for row in rows:
        left = " ".join(row.container) or "-"
        right = " ".join(row.local) or "(dropped)"
        out.append(f"  {left:<{width}}  {right:<36}  {row.why}")
    return out


def cost_estimate(job: MPIJob, plan: Plan) -> dict[str, Any]:
    """On-demand price of the instances and the ceiling for max run (see smmpi.pricing).

    A spot job is usually billed less, but its price is not known in advance,
    so the ceiling stays the on-demand one and ``spot`` says so.
    """
    from smmpi import pricing

    est = pricing.estimate(job.instance_type, job.instances, job.max_run, plan.region, api=plan.api)
    est["spot"] = job.use_spot
    if job.use_spot:
        est["spot_note"] = (
            "spot is usually cheaper than on-demand; the ceiling shown is the on-demand one"
        )
    return est


def cost_lines(est: dict[str, Any]) -> list[str]:
    """The dry run's cost rows: the dated estimate, then the spot caveat if any."""
    from smmpi import pricing

    text = pricing.describe(est)
    lines = [f"  cost         {text.removeprefix('cost: ').removeprefix('cost ')}"]
    lines.append(f"  teardown     {pricing.teardown_line(est).removeprefix('teardown: ')}")
    if est.get("spot_note"):
        lines.append(f"  spot         {est['spot_note']}")
    return lines


def _size(count: int) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if count >= scale:
            return f"{count / scale:.1f} {unit}"
    return f"{count} B"


def files_lines(job: MPIJob, shown: int = 20) -> list[str]:
    """What ships as the code dir, each file with its size, and the total (a warning if big)."""
    from smmpi.catalog import SOURCE_WARN_BYTES

    manifest = job.program.manifest()
    total = sum(size for _, size in manifest)
    listed = ", ".join(f"{name} ({_size(size)})" for name, size in manifest[:shown])
    if len(manifest) > shown:
        listed += f", and {len(manifest) - shown} more"
    lines = [f"  files        {len(manifest)} file(s), {total:,} bytes in all: {listed}"]
    if total > SOURCE_WARN_BYTES:
        lines.append(
            f"  warning      over {SOURCE_WARN_BYTES // 1_000_000} MB of code: every instance "
            "downloads it; data belongs in an --input channel"
        )
    return lines


_BUILT_BY = {
    "estimator": "the container's sagemaker-training toolkit",
    "model-trainer": "ModelTrainer's MPI driver, sm_drivers/distributed_drivers/mpi_driver.py, "
    "run here up to its mpirun",
}


def _model_trainer_lines(plan: Plan) -> list[str]:
    """What ModelTrainer uploads beside the code, and what its driver forwards to ranks."""
    if plan.api != "model-trainer":
        return []
    lines = [
        "  api          ModelTrainer (sagemaker.modules.train): the container runs "
        + shlex.join(
            [
                *plan.request["AlgorithmSpecification"].get("ContainerEntrypoint", []),
                *plan.request["AlgorithmSpecification"].get("ContainerArguments", []),
            ]
        )
    ]
    for name, files in plan.channels.items():
        lines.append(f"  channel      {name}: {', '.join(files)}")
    forwarded = ", ".join(plan.forwarded) or "none (the request's Environment sets none)"
    lines.append(f"  credentials  forwarded to every rank by the driver's -x: {forwarded}")
    return lines


def render_plan(job: MPIJob, plan: Plan) -> str:
    """Summary first (what a person checks), then the full request and mpirun line."""
    req = plan.request
    image = req["AlgorithmSpecification"]["TrainingImage"]
    others = [f for f in plan.files if f != job.program.script]
    lines = [
        "smmpi submit --dry-run: nothing was created",
        f"  job          {plan.job_name}",
        f"  program      {job.program.script}" + (f" (+ {', '.join(others)})" if others else ""),
        *files_lines(job),
        f"  world        {job.instances} x {job.instance_type}, {job.ppn} processes each "
        f"= {plan.world_size} ranks",
        f"  framework    {job.framework} {job.framework_version} ({job.py_version})",
        f"  image        {image}",
        f"  role         {req['RoleArn']}",
        f"  source dir   {plan.code_uri}",
        f"  output       {req['OutputDataConfig']['S3OutputPath']}",
        f"  max run      {req['StoppingCondition']['MaxRuntimeInSeconds']} s",
    ]
    for name, channel in plan_channels(req).items():
        lines.append(f"  input        {name} = {channel}")
    if "VpcConfig" in req:
        vpc = req["VpcConfig"]
        lines.append(
            f"  vpc          subnets {', '.join(vpc['Subnets'])}; "
            f"security groups {', '.join(vpc['SecurityGroupIds'])}"
        )
    if job.use_spot:
        spot = f"managed spot training, max wait {job.max_wait} s"
        lines.append(f"  spot         {spot}")
    if job.checkpoint_s3_uri:
        lines.append(f"  checkpoints  {job.checkpoint_s3_uri}")
    if job.keep_alive:
        lines.append(f"  warm pool    instances kept {job.keep_alive} s after the job for the next")
    lines += cost_lines(cost_estimate(job, plan))
    lines += [f"  note         {note}" for note in plan.notes]
    lines += _model_trainer_lines(plan)
    mode = local_mode()
    lines += [
        "",
        f"mpirun on algo-1 (built by {_BUILT_BY[plan.api]}):",
        "  " + shlex.join(plan.mpirun),
        "",
        _HEADER[mode],
        *_side_by_side(plan.mpirun, mode),
        "",
        "CreateTrainingJob request:",
        json.dumps(req, indent=2),
    ]
    return "\n".join(lines)


def plan_json(job: MPIJob, plan: Plan) -> dict[str, Any]:
    """``submit --dry-run --json``: the plan, its cost, and the local translation row by row."""
    from dataclasses import asdict

    from smmpi.runners.local.translate import table

    mode = local_mode()
    data = plan.to_json()
    data["cost"] = cost_estimate(job, plan)
    data["source_bytes"] = sum(size for _, size in job.program.manifest())
    data["local_mode"] = mode
    data["local_mpirun"] = [asdict(r) for r in table(plan.mpirun, sys.executable, mode)]
    return data
