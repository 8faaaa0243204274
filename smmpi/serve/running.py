"""A job's worker process as serve holds it: what it holds, its environment, its output, its end."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from smmpi.serve.forked import Forked, ForkServer
from smmpi.serve.state import read_json, write_json

STOP_GRACE = 20.0  # seconds between SIGTERM and SIGKILL, as SageMaker's stop gives the container


@dataclass
class Running:
    """What serve holds for a job that has not ended yet."""

    thread: threading.Thread | None = None
    server: ForkServer | None = None  # its instances
    proc: Forked | None = None  # its worker
    stop: threading.Event = field(default_factory=threading.Event)
    why_stop: str = "Stopped"  # or MaxRuntimeExceeded


def worker_env(runs: Path) -> dict[str, str]:
    """serve's environment without any AWS variable (the ranks get nothing of serve's)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(SMMPI_LOCAL_JOBS=str(runs), SMMPI_LOCAL_JOBS_KEEP="1000000", PYTHONUNBUFFERED="1")
    return env


def read_result(work: Path, running: Running, code: int | None) -> dict[str, Any]:
    """How the run ended, as the worker wrote it (or as serve saw its worker end)."""
    path = work / "result.json"
    if path.is_file():
        result: dict[str, Any] = read_json(path)
        return result
    status = "Stopped" if running.stop.is_set() else "Failed"
    line = f"the job's worker ended with code {code}"
    return {"status": status, "exit_code": code, "line": line}


def pump_lines(stream: Any, sink: Callable[[str], None]) -> None:
    """Each line of the worker's ``stream`` to ``sink``, decoded, without its line end."""
    for raw in iter(stream.readline, b""):
        sink(raw.decode("utf-8", errors="replace").rstrip("\r\n"))


def write_spec(
    work: Path, request: dict[str, Any], source: bytes, isolation: str | None, exact: bool
) -> None:
    """What the worker process runs: the request, its code, the mode and the folders."""
    (work / "sourcedir.tar.gz").write_bytes(source)
    spec = {
        "request": request,
        "source": str(work / "sourcedir.tar.gz"),
        "isolation": isolation,
        "exact": exact,
        "result": str(work / "result.json"),
        "checkpoints": str(work / "checkpoints") if (work / "checkpoints").is_dir() else None,
        "shards": str(work / "shards") if (work / "shards").is_dir() else None,
    }
    write_json(work / "spec.json", spec)
