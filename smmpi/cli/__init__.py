"""The ``smmpi`` command: a thin layer of click over :mod:`smmpi.api` and :mod:`smmpi.ops`.

Start-up must stay fast (``smmpi --help`` < 0.3 s): every module here imports
only click at module level; the SageMaker SDK, boto3 and numpy load inside
commands.
"""

from __future__ import annotations

from smmpi.cli import infra, local_jobs, ops, slurm
from smmpi.cli.app import main
from smmpi.cli.metrics import metrics_cmd
from smmpi.cli.run import run_cmd
from smmpi.cli.serve import serve_cmd
from smmpi.cli.submit import submit_cmd

__all__ = ["main"]

for _command in (
    run_cmd,
    submit_cmd,
    ops.status_cmd,
    ops.jobs_cmd,
    ops.stop_cmd,
    ops.logs_cmd,
    ops.fetch_cmd,
    metrics_cmd,
    infra.infra_group,
    infra.doctor_cmd,
    local_jobs.local_jobs_group,
    serve_cmd,
    slurm.slurm_group,
):
    main.add_command(_command)
