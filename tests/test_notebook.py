"""notebooks/mpi_on_sagemaker.ipynb runs top to bottom (nbclient) against a moto server.

The kernel inherits this process's environment, so the test sets it first: a
clean HOME and config, moto's endpoint and fake credentials, a role, a bucket
and a folder for local jobs. A proxy that refuses every connection is set for
anything but loopback, so a call that tried to reach AWS itself would fail its
cell instead of leaving the machine.
"""

from __future__ import annotations

import json
import os
import tarfile
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbclient import NotebookClient

from tests.helpers import ROOT, MotoServer, make_bucket

NOTEBOOK = ROOT / "notebooks" / "mpi_on_sagemaker.ipynb"
ROLE = "arn:aws:iam::123456789012:role/smmpi-nb"
BUCKET = "smmpi-notebook"


def code_cells(nb: Any) -> list[Any]:
    return [c for c in nb.cells if c.cell_type == "code"]


def cell_text(cell: Any) -> str:
    """Everything a code cell showed: streams, results and tracebacks, as text."""
    parts: list[str] = []
    for out in cell.get("outputs", []):
        if out.output_type == "stream":
            parts.append(out.text)
        elif out.output_type == "error":
            parts.append("\n".join(out.traceback))
        else:
            parts.append(str(out.get("data", {}).get("text/plain", "")))
    return "".join(parts)


def cell_with(nb: Any, source_fragment: str) -> Any:
    """The one code cell whose source contains ``source_fragment``."""
    found = [c for c in code_cells(nb) if source_fragment in c.source]
    assert len(found) == 1, f"{len(found)} cells contain {source_fragment!r}"
    return found[0]


def test_committed_notebook_has_no_outputs() -> None:
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nbformat.validate(nb)
    cells = code_cells(nb)
    assert cells
    for cell in cells:
        assert cell.outputs == [], f"committed with outputs: {cell.source[:60]!r}"
        assert cell.execution_count is None, f"committed executed: {cell.source[:60]!r}"


@pytest.mark.timeout(300)
def test_notebook_runs_clean_against_moto(
    moto_server: MotoServer,
    env: dict[str, str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    jobs_dir = tmp_path / "local-jobs"
    make_bucket(moto_server, BUCKET)  # as `smmpi infra deploy` would have
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    kernel_env = {
        **env,
        **moto_server.aws_env(),
        "SMMPI_ROLE": ROLE,
        "SMMPI_BUCKET": BUCKET,
        "SMMPI_LOCAL_JOBS": str(jobs_dir),
        "HTTP_PROXY": "http://127.0.0.1:9",
        "HTTPS_PROXY": "http://127.0.0.1:9",
        "NO_PROXY": "127.0.0.1,localhost",
    }
    for key in list(os.environ):
        if key not in kernel_env:
            monkeypatch.delenv(key)
    for key, value in kernel_env.items():
        monkeypatch.setenv(key, value)

    nb = nbformat.read(NOTEBOOK, as_version=4)
    client = NotebookClient(
        nb,
        timeout=240,
        kernel_name="python3",
        resources={"metadata": {"path": str(cwd)}},
    )
    try:
        client.execute()  # raises CellExecutionError at the first failing cell
    finally:
        nbformat.write(nb, tmp_path / "executed.ipynb")  # kept for a failing run's reader

    cells = code_cells(nb)
    errors = [o for c in cells for o in c.outputs if o.output_type == "error"]
    assert errors == []
    assert all(c.execution_count is not None for c in cells)
    everything = "".join(cell_text(c) for c in cells)
    assert "testing-secret-do-not-print" not in everything
    assert "INFO:botocore" not in everything  # the SDK's import-time basicConfig, undone

    # 2. the demo at 2 ranks, then 3 hosts x 2
    assert "demo: all 2 ranks verified their results" in cell_text(
        cell_with(nb, 'sh("smmpi run demo --instances 1 --ppn 2")')
    )
    six = cell_text(cell_with(nb, 'sh("smmpi run demo --instances 3 --ppn 2")'))
    assert "demo: all 6 ranks verified their results" in six
    assert "(3 host(s): algo-1, algo-2, algo-3)" in six

    # 3. the misspelt keyword is refused; the plan has world size 6, the CLI agrees
    assert "did you mean 'ppn'?" in cell_text(cell_with(nb, "process_per_host=2"))
    plan_out = cell_text(cell_with(nb, "p = job.plan()"))
    assert "world size: 6" in plan_out
    assert '"sagemaker_mpi_num_of_processes_per_host": "2"' in plan_out
    assert f'"RoleArn": "{ROLE}"' in plan_out
    mpirun = cell_text(cell_with(nb, "shlex.join(p.mpirun)"))
    assert mpirun.startswith("mpirun --host algo-1:2,algo-2:2,algo-3:2 -np 6 ")
    translated = cell_text(cell_with(nb, "translate(p.mpirun"))
    assert "kept; nothing is launched remotely" in translated  # same Open MPI 4 flags
    assert "-x SM_..." in translated
    dry = cell_text(cell_with(nb, "--dry-run --json"))
    assert "world_size from the CLI: 6" in dry
    assert "same mpirun as the Python plan: True" in dry

    # 4. local mode ran the 3 x 2 request here and left its record and archives
    records = [json.loads(p.read_text()) for p in jobs_dir.glob("*/describe.json")]
    demo = [r for r in records if r["TrainingJobName"].startswith("smmpi-demo-")]
    assert len(demo) == 1
    assert demo[0]["TrainingJobStatus"] == "Completed"
    assert demo[0]["ResourceConfig"]["InstanceCount"] == 3
    assert "status: Completed" in cell_text(cell_with(nb, "local = job.submit(local=True)"))
    tree = cell_text(cell_with(nb, "host = Path(local.record"))
    assert "opt/ml/code/demo.py\n" in tree
    assert "'current_host': 'algo-2', 'hosts': ['algo-1', 'algo-2', 'algo-3']" in tree

    # 5. the job was created at moto with the same shape, and ended Completed
    sm = moto_server.boto3_client("sagemaker")
    summaries = sm.list_training_jobs()["TrainingJobSummaries"]
    assert len(summaries) == 1
    name = summaries[0]["TrainingJobName"]
    desc = sm.describe_training_job(TrainingJobName=name)
    assert desc["TrainingJobStatus"] == "Completed"
    assert desc["ResourceConfig"]["InstanceCount"] == 3
    assert desc["HyperParameters"]["sagemaker_mpi_num_of_processes_per_host"] == "2"
    assert desc["RoleArn"] == ROLE
    s3 = moto_server.boto3_client("s3")
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=BUCKET).get("Contents", [])]
    code = json.loads(desc["HyperParameters"]["sagemaker_submit_directory"])
    assert code.removeprefix(f"s3://{BUCKET}/") in keys
    assert code.startswith(f"s3://{BUCKET}/{name}/source/")
    submitted = cell_text(cell_with(nb, "job.submit(wait=True"))
    assert f"created training job {name}" in submitted
    assert "status: Completed" in submitted
    status = cell_text(cell_with(nb, 'sh(f"smmpi status {JOB}")'))
    assert "Completed" in status and "6 in all" in status

    # 6. logs: moto has none (said so); the local rank-0 log is real
    assert "no logs" in cell_text(cell_with(nb, "smmpi logs {JOB}"))
    assert "demo: all 6 ranks verified their results" in cell_text(cell_with(nb, '"rank-0.log"'))

    # 7. fetch: moto has no artifacts, and the command says so with exit code 1
    fetched = cell_text(cell_with(nb, "smmpi fetch {JOB}"))
    assert "has no model or output archive" in fetched
    assert "(exit code 1)" in fetched

    # 8. bench ran locally, its JSON is in the output archive, and the plot is a PNG
    bench = [r for r in records if r["TrainingJobName"].startswith("smmpi-bench-")]
    assert len(bench) == 1 and bench[0]["TrainingJobStatus"] == "Completed"
    archive = jobs_dir / bench[0]["TrainingJobName"] / "output.tar.gz"
    with tarfile.open(archive) as tar:
        member = tar.extractfile("data/bench.json")
        assert member is not None
        results = json.load(member)
    assert results["world_size"] == 2
    assert len(results["sizes"]) == len(results["pingpong"]["pickle"]["bandwidth_Bps"]) > 1
    plot = cell_with(nb, "import matplotlib.pyplot as plt")
    assert any("image/png" in o.get("data", {}) for o in plot.outputs)
    assert "buffer/pickle bandwidth" in cell_text(plot)
