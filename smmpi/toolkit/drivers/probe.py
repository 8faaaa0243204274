"""Run ModelTrainer's MPI driver on algo-1 up to its mpirun line, and print that line.

``python -I probe.py SM_DRIVERS`` with a JSON object on stdin: ``resource_config``,
``input_data_config``, ``hyperparameters`` and ``environment`` (the container's variables).
The driver's own ``scripts/environment.py`` turns the configs into the ``SM_*`` variables, as
``sm_train.sh`` does, and the driver's own ``main`` builds the line. Only what reaches other
machines or this one is replaced: sshd, the ssh bootstrap, the status files, the file
``/etc/environment``, and the command's execution, which is recorded instead.

Standalone: it imports the drivers it is given, never smmpi.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
import tempfile
import types
from pathlib import Path
from typing import Any


def _paramiko_stand_in() -> None:
    """The driver imports paramiko at module level, for the ssh bootstrap the probe replaces:
    a stand-in of the names it reads at import (importing paramiko costs 0.13 s)."""
    module = types.ModuleType("paramiko")
    client = types.SimpleNamespace(MissingHostKeyPolicy=object, SSHClient=object)
    module.client = client  # type: ignore[attr-defined]
    module.MissingHostKeyPolicy = object  # type: ignore[attr-defined]
    module.SSHClient = object  # type: ignore[attr-defined]
    module.SSHException = Exception  # type: ignore[attr-defined]
    sys.modules["paramiko"] = module


def _environment(drivers: Path, given: dict[str, Any]) -> None:
    import environment  # the driver's scripts/environment.py

    environment.read_source_code_json = lambda: json.loads(  # type: ignore[attr-defined]
        (drivers / "sourcecode.json").read_text()
    )
    environment.read_distributed_json = lambda: json.loads(  # type: ignore[attr-defined]
        (drivers / "distributed.json").read_text()
    )
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "sm_training.env"
        environment.set_env(
            given["resource_config"],
            given["input_data_config"],
            given["hyperparameters"],
            output_file=str(out),
        )
        for line in out.read_text().splitlines():
            (name, value) = shlex.split(line.removeprefix("export "))[0].split("=", 1)
            os.environ[name] = value


def main() -> int:
    drivers = Path(sys.argv[1])
    given = json.load(sys.stdin)
    os.environ.clear()
    os.environ.update(given["environment"])
    sys.path[:0] = [str(drivers / "distributed_drivers"), str(drivers / "scripts"), str(drivers)]
    _paramiko_stand_in()
    _environment(drivers, given)
    import mpi_driver

    recorded: list[list[str]] = []

    def execute(command: list[str]) -> tuple[int, str]:
        recorded.append(list(command))
        return 0, ""

    for name in ("write_env_vars_to_file", "start_sshd_daemon"):
        setattr(mpi_driver, name, lambda: None)
    mpi_driver.bootstrap_master_node = lambda hosts: None
    mpi_driver.write_status_file_to_workers = lambda hosts: None
    mpi_driver.execute_commands = execute
    mpi_driver.main()
    print(json.dumps({"mpirun": recorded[0] if recorded else None}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
