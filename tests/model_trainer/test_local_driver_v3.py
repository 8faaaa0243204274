"""SDK v3's ModelTrainer (``sagemaker.train``, in a venv of its own): its request and its own
``sm_drivers`` files, run here as the container runs them."""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers import processes_left, write
from tests.model_trainer.test_local_driver import FAILS, WORLD, env_for, expected, local_run, ranks
from tests.sdk.sdk3 import sdk3_python


def _v3_env(tmp_path: Path) -> dict[str, str]:
    return {**env_for(tmp_path), "SMMPI_SDK3_PYTHON": sdk3_python()}


def test_v3s_driver_runs_the_whole_world_at_2x2(tmp_path: Path) -> None:
    program = write(tmp_path / "world.py", WORLD)
    code, out, err = local_run(tmp_path, program, 2, 2, "--json", env=_v3_env(tmp_path))
    assert code == 0, err[-3000:]
    assert ranks(err) == expected(2, 2)
    assert "smmpi: note: built by SDK v3's ModelTrainer (sagemaker.train)" in err
    record = json.loads(out)
    assert record["HyperParameters"] == {}  # v3 sends an empty one; v2 none
    # every instance has v3's own drivers: one more script than v2's
    for host in ("algo-1", "algo-2"):
        drivers = Path(record["LocalHostsDir"]) / host / "opt" / "ml" / "input" / "data"
        assert (drivers / "sm_drivers" / "scripts" / "install_requirements.py").is_file()
        assert (drivers / "code" / "world.py").is_file()
    assert processes_left(str(tmp_path)) == []


def test_v3s_driver_fails_with_its_own_text_and_the_rank_named(tmp_path: Path) -> None:
    program = write(tmp_path / "fails.py", FAILS)
    code, _, err = local_run(tmp_path, program, 2, 2, env=_v3_env(tmp_path))
    assert code == 1, err[-3000:]
    assert "smmpi: rank 3 (algo-2) failed: RuntimeError: rank three is broken" in err
    assert "smmpi: the MPI driver's failure file (algo-1): subprocess.CalledProcessError" in err
    assert processes_left(str(tmp_path)) == []
