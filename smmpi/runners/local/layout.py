"""Each emulated instance's ``/opt/ml`` tree on this machine, laid out before a run.

The tree holds what SageMaker puts on an instance: the config files under
``input/config``, the channels under ``input/data``, the code, and empty model
and output dirs. Ranks also load smmpi's rank hook (:mod:`.rank_hook`) as
their ``sitecustomize``.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Mapping
from pathlib import Path

from smmpi.toolkit.environment import input_data_config, resource_config
from smmpi.toolkit.hosts import HostDirs
from smmpi.toolkit.shape import JobShape

#: Copied as every rank's ``sitecustomize.py`` (a file, not imported here).
RANK_HOOK = Path(__file__).with_name("rank_hook.py")


def host_dirs(run_dir: Path, host: str) -> HostDirs:
    return HostDirs(run_dir / host / "opt" / "ml")


def stack_dir(run_dir: Path) -> Path:
    """Where ranks record their pid and dump their stacks."""
    return run_dir / ".smmpi" / "stacks"


def site_dir(run_dir: Path) -> Path:
    """Where the ranks' ``sitecustomize`` is, first on their PYTHONPATH."""
    return run_dir / ".smmpi" / "site"


def write_config(
    dirs: HostDirs,
    shape: JobShape,
    host: str,
    hyperparameters_json: Mapping[str, str] | None = None,
) -> None:
    """The files SageMaker writes to ``/opt/ml/input/config`` on each instance."""
    hps = (
        hyperparameters_json
        if hyperparameters_json is not None
        else {k: json.dumps(v) for k, v in shape.hyperparameters.items()}
    )
    for name, content in (
        ("resourceconfig.json", resource_config(shape, host)),
        ("hyperparameters.json", hps),
        ("inputdataconfig.json", input_data_config(shape)),
    ):
        (dirs.config / name).write_text(json.dumps(content, indent=2) + "\n", encoding="utf-8")


def prepare_hosts(
    shape: JobShape,
    run_dir: Path,
    lay_code: Callable[[HostDirs], None],
    hyperparameters_json: dict[str, str] | None = None,
) -> list[HostDirs]:
    """Create every emulated instance's /opt/ml tree and lay out its code dir."""
    all_dirs = []
    for host in shape.hosts:
        dirs = host_dirs(run_dir, host)
        dirs.create()
        write_config(dirs, shape, host, hyperparameters_json)
        lay_code(dirs)
        all_dirs.append(dirs)
    for d in (stack_dir(run_dir), site_dir(run_dir)):
        d.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(RANK_HOOK, site_dir(run_dir) / "sitecustomize.py")
    return all_dirs
