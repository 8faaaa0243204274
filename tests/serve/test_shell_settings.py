"""serve's own shell: its Open MPI settings reach no job's container, as on SageMaker."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.serve.serving import (
    ServeProcess,
    demo_source,
    dry_run_request,
    log_lines,
    make_bucket,
    put_source,
    wait_end,
)

pytestmark = pytest.mark.aws


def test_serves_open_mpi_settings_are_left_out_of_every_job(
    env: dict[str, str], tmp_path: Path
) -> None:
    """OMPI_MCA_plm=isolated in serve's environment made a 2-instance job start every rank on
    algo-1 and fail ("not enough slots")."""
    shell = {**env, "OMPI_MCA_plm": "isolated", "PMIX_MCA_gds": "hash"}
    serve = ServeProcess(tmp_path / "state", shell, "--isolation", "hosts")
    try:
        make_bucket(serve, "settings-bucket")
        request = dry_run_request(
            serve.env, "settings-job", "settings-bucket", "--instances", "2", "--ppn", "1"
        )
        put_source(serve, request, demo_source())
        serve.client("sagemaker").create_training_job(**request)
        desc = wait_end(serve, "settings-job")
        assert desc["TrainingJobStatus"] == "Completed", desc.get("FailureReason")
        text = "\n".join(
            [*serve.lines, *(x for ls in log_lines(serve, "settings-job").values() for x in ls)]
        )
        assert "left out this shell's Open MPI settings (OMPI_MCA_plm, PMIX_MCA_gds)" in text, text[
            -3000:
        ]
    finally:
        serve.stop()
