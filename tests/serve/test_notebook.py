"""The notebook's SageMaker cells against ``smmpi serve``: the submitted job runs for real,
so its logs and artifacts exist (against moto, tests/test_notebook.py, they cannot)."""

from __future__ import annotations

import os
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from tests.serve.serving import ServeProcess, make_bucket
from tests.test_notebook import NOTEBOOK, ROLE, cell_text, cell_with, code_cells

pytestmark = pytest.mark.aws


@pytest.mark.timeout(600)
def test_the_notebooks_sagemaker_cells_run_against_serve(
    serve: ServeProcess, env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bucket = "smmpi-notebook-serve"
    make_bucket(serve, bucket)
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    kernel_env = {
        **env,
        **serve.exports,
        "SMMPI_ROLE": ROLE,
        "SMMPI_BUCKET": bucket,
        "SMMPI_LOCAL_JOBS": str(tmp_path / "local-jobs"),
        "HTTP_PROXY": "http://127.0.0.1:9",
        "HTTPS_PROXY": "http://127.0.0.1:9",
        "NO_PROXY": "127.0.0.1,localhost",
    }
    for key in list(os.environ):
        if key not in kernel_env:
            monkeypatch.delenv(key)
    for key, value in kernel_env.items():
        monkeypatch.setenv(key, value)
    nb = nbformat.read(NOTEBOOK, as_version=4)  # type: ignore[no-untyped-call]
    client = NotebookClient(
        nb, timeout=400, kernel_name="python3", resources={"metadata": {"path": str(cwd)}}
    )
    try:
        client.execute()
    finally:
        nbformat.write(nb, tmp_path / "executed.ipynb")  # type: ignore[no-untyped-call]
    cells = code_cells(nb)
    assert [o for c in cells for o in c.outputs if o.output_type == "error"] == []
    everything = "".join(cell_text(c) for c in cells)
    assert serve.exports["AWS_SECRET_ACCESS_KEY"] not in everything
    submitted = cell_text(cell_with(nb, "job.submit(wait=True"))
    assert "status: Completed" in submitted
    name = next(
        s["TrainingJobName"]
        for s in serve.client("sagemaker").list_training_jobs(MaxResults=100)[
            "TrainingJobSummaries"
        ]
        if s["TrainingJobName"] in submitted
    )
    desc = serve.client("sagemaker").describe_training_job(TrainingJobName=name)
    assert desc["TrainingJobStatus"] == "Completed"
    assert desc["ResourceConfig"]["InstanceCount"] == 3
    logs = cell_text(cell_with(nb, "smmpi logs {JOB}"))
    assert "demo: all 6 ranks verified their results" in logs
    fetched = cell_text(cell_with(nb, "smmpi fetch {JOB}"))
    assert "has no model or output archive" not in fetched
    assert "(exit code 0)" in fetched and "model: 0 file(s) in" in fetched  # demo saves none
