"""The instances of a job as the container names them, and each one's ``/opt/ml`` tree.

Locally, ``/opt/ml`` of emulated instance ``algo-k`` is ``<run dir>/algo-k/opt/ml``;
values that name container paths are moved under that root (:func:`on_host`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

CONTAINER_ROOT = "/opt/ml"


def host_name(index: int) -> str:
    """SageMaker's name for the index-th (0-based) instance of a job."""
    return f"algo-{index + 1}"


def host_of_rank(rank: int, ppn: int, instances: int) -> str:
    """The instance a rank runs on: the container maps ranks by slot (``-map-by slot``)."""
    return host_name(min(rank // ppn, instances - 1))


def on_host(value: Any, dirs: HostDirs | None) -> Any:
    """A value naming a container path (``/opt/ml/...``) as that path on an emulated host."""
    if dirs is None or not isinstance(value, str):
        return value
    if value == CONTAINER_ROOT or value.startswith(CONTAINER_ROOT + "/"):
        return str(dirs.root) + value[len(CONTAINER_ROOT) :]
    return value


@dataclass(frozen=True)
class HostDirs:
    """The ``/opt/ml`` tree of one emulated instance."""

    root: Path  # stands in for /opt/ml

    @property
    def code(self) -> Path:
        return self.root / "code"

    @property
    def input(self) -> Path:
        return self.root / "input"

    @property
    def config(self) -> Path:
        return self.root / "input" / "config"

    @property
    def data(self) -> Path:
        return self.root / "input" / "data"

    @property
    def model(self) -> Path:
        return self.root / "model"

    @property
    def output(self) -> Path:
        return self.root / "output"

    @property
    def output_data(self) -> Path:
        return self.root / "output" / "data"

    @property
    def intermediate(self) -> Path:
        return self.root / "output" / "intermediate"

    @property
    def failure(self) -> Path:
        return self.root / "output" / "failure"

    def channel(self, name: str) -> Path:
        return self.data / name

    def create(self) -> None:
        for d in (
            self.code,
            self.config,
            self.data,
            self.model,
            self.output_data,
            self.intermediate,
        ):
            d.mkdir(parents=True, exist_ok=True)


def host_dirs(run_dir: Path, host: str) -> HostDirs:
    return HostDirs(run_dir / host / "opt" / "ml")
