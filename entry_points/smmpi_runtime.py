"""What an MPI program needs to know about the SageMaker runtime it runs in.

This module travels with every entry point (and with users' own scripts) in the
job's source dir, so it depends on mpi4py and numpy only.

Why it exists: SageMaker's container toolkit forwards the *master's*
``SM_CURRENT_HOST`` to every rank, so a rank on algo-3 is told it is on algo-1.
The true host follows from the rank, the host list and the processes per host,
because the toolkit maps ranks by slot (``--host algo-1:n,... -map-by slot``).
Outside SageMaker (plain ``mpirun``) the same calls fall back to this machine.
"""

from __future__ import annotations

import json
import os
import socket
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "Runtime",
    "VerificationError",
    "check",
    "report",
    "require_world_size",
    "runtime",
    "tf_config",
    "torch_init",
]


class VerificationError(AssertionError):
    """A rank computed something other than what it should have."""


def _json_env(name: str, default: Any) -> Any:
    raw = os.environ.get(name)
    if not raw:
        return default
    try:
        return json.loads(raw)
    except ValueError:
        return default


@dataclass(frozen=True)
class Runtime:
    """Where this rank is, in SageMaker's terms."""

    rank: int
    size: int
    local_rank: int
    local_size: int
    host: str
    hosts: list[str]
    processes_per_host: int
    model_dir: str
    output_data_dir: str
    num_cpus: int
    job_name: str
    hyperparameters: dict[str, Any] = field(default_factory=dict)
    channels: dict[str, str] = field(default_factory=dict)
    on_sagemaker: bool = False

    @property
    def host_index(self) -> int:
        return self.hosts.index(self.host) if self.host in self.hosts else 0

    @property
    def is_master(self) -> bool:
        return self.rank == 0


def _processes_per_host(size: int, hosts: Sequence[str]) -> int:
    params = _json_env("SM_FRAMEWORK_PARAMS", {})
    ppn = (
        (params or {}).get("sagemaker_mpi_num_of_processes_per_host")
        if isinstance(params, dict)
        else None
    )
    if isinstance(ppn, int) and ppn > 0:
        return ppn
    # No MPI parameters: assume the world is spread evenly over the hosts.
    return max(1, -(-size // max(1, len(hosts))))


def _int_env(names: Sequence[str], default: int) -> int:
    """The first of ``names`` set to an integer, else ``default``."""
    for name in names:
        raw = os.environ.get(name, "")
        if raw.strip().lstrip("-").isdigit():
            return int(raw)
    return default


def _outside_sagemaker(rank: int, size: int) -> tuple[str, int, int]:
    """Host, local rank and local size under plain ``mpirun`` or a SLURM job.

    Under SLURM the node's name is ``SLURMD_NODENAME``; Open MPI's own local rank wins over
    SLURM's, because under ``mpirun`` inside a job every rank has ``SLURM_LOCALID=0``.
    """
    host = os.environ.get("SLURMD_NODENAME") or socket.gethostname()
    local_rank = _int_env(("OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID"), rank)
    local_size = _int_env(("OMPI_COMM_WORLD_LOCAL_SIZE", "SLURM_NTASKS_PER_NODE"), size)
    return host, local_rank, local_size


def runtime(comm: Any = None) -> Runtime:
    """Describe this rank. ``comm`` defaults to ``MPI.COMM_WORLD``."""
    if comm is None:
        from mpi4py import MPI

        comm = MPI.COMM_WORLD
    rank, size = int(comm.Get_rank()), int(comm.Get_size())
    hosts = _json_env("SM_HOSTS", None)
    on_sagemaker = isinstance(hosts, list) and bool(hosts)
    if on_sagemaker:
        hosts = [str(h) for h in hosts]
        ppn = _processes_per_host(size, hosts)
        index = min(rank // ppn, len(hosts) - 1)
        host = hosts[index]
        local_rank = rank - index * ppn
        local_size = min(ppn, size - index * ppn)
    else:
        host, local_rank, local_size = _outside_sagemaker(rank, size)
        hosts = [host]
        ppn = size
    env = _json_env("SM_TRAINING_ENV", {})
    channels = {
        key[len("SM_CHANNEL_") :].lower(): value
        for key, value in os.environ.items()
        if key.startswith("SM_CHANNEL_") and key != "SM_CHANNELS"
    }
    return Runtime(
        rank=rank,
        size=size,
        local_rank=local_rank,
        local_size=local_size,
        host=host,
        hosts=hosts,
        processes_per_host=ppn,
        model_dir=os.environ.get("SM_MODEL_DIR", os.path.join(os.getcwd(), "model")),
        output_data_dir=os.environ.get(
            "SM_OUTPUT_DATA_DIR", os.path.join(os.getcwd(), "output", "data")
        ),
        num_cpus=int(os.environ.get("SM_NUM_CPUS", os.cpu_count() or 1)),
        job_name=str(env.get("job_name", "")) if isinstance(env, dict) else "",
        hyperparameters=_json_env("SM_HPS", {}),
        channels=channels,
        on_sagemaker=on_sagemaker,
    )


def require_world_size(comm: Any, minimum: int = 2, multiple_of: int = 1) -> None:
    """Exit with a clear message (on rank 0) if the world size is unsupported."""
    size = int(comm.Get_size())
    if size >= minimum and size % multiple_of == 0:
        return
    allowed = f">= {minimum}" + (f" and a multiple of {multiple_of}" if multiple_of > 1 else "")
    prog = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else "this program"
    sys.exit(refuse(comm, f"{prog}: world size {size} is not supported (needs {allowed})"))


def refuse(comm: Any, message: str) -> int:
    """Rank 0 prints ``message``; every rank waits until it is out (so that no rank's exit
    ends the job first), then the caller exits with the returned 2."""
    if comm.Get_rank() == 0:
        print(message, file=sys.stderr, flush=True)
    comm.Barrier()
    return 2


def check(condition: bool, message: str) -> None:
    """Raise VerificationError if a rank's own result is wrong."""
    if not condition:
        raise VerificationError(message)


def report(comm: Any, lines: Sequence[str] | str, title: str | None = None) -> list[str] | None:
    """Gather each rank's lines to rank 0 and print them once, in rank order.

    Interleaved prints from many ranks are unreadable in a SageMaker log; one
    ordered summary is not. Returns the printed lines on rank 0, None elsewhere.
    """
    rt = runtime(comm)
    own = [lines] if isinstance(lines, str) else list(lines)
    gathered = comm.gather((rt.rank, rt.host, own), root=0)
    if gathered is None:
        return None
    out: list[str] = []
    if title:
        out.append(title)
    for rank, host, rank_lines in sorted(gathered):
        for line in rank_lines:
            out.append(f"  rank {rank} ({host}): {line}")
    print("\n".join(out), flush=True)
    return out


def _free_port() -> int:
    """A port that is free on this host right now (another process may take it later)."""
    with _reserve_port() as sock:
        port: int = sock.getsockname()[1]
        return port


def _reserve_port() -> socket.socket:
    """A socket bound to a free port; hold it while ranks agree, so co-located ranks differ."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("", 0))
    return sock


def _address(rt: Runtime, single_host: bool = False) -> str:
    """An address other ranks can reach this rank at.

    ``single_host``: every rank runs on one host (plain ``mpirun`` here, or smmpi's
    processes mode), where loopback always works and the hostname may not resolve.
    smmpi's isolated hosts are hosts of their own: algo-k resolves there, as on SageMaker.
    """
    if single_host:
        return "127.0.0.1"
    return rt.host if rt.on_sagemaker else socket.gethostname()


def _on_one_host(comm: Any) -> bool:
    """True when every rank of ``comm`` runs on this machine (same hostname everywhere)."""
    return len(set(comm.allgather(socket.gethostname()))) == 1


def _world(comm: Any) -> Any:
    if comm is None:
        from mpi4py import MPI

        return MPI.COMM_WORLD
    return comm


def tf_config(comm: Any = None) -> dict[str, Any]:
    """Build TensorFlow's ``TF_CONFIG`` from the MPI world, one worker per rank.

    Every rank reserves a free port on its own host and keeps it bound until
    all (host, port) pairs are gathered, so nothing is hard-coded and no two
    workers on one host collide (seed 000 hard-coded its ports). The caller
    sets ``os.environ["TF_CONFIG"] = json.dumps(tf_config(comm))`` before
    creating the strategy, which binds the port again.
    """
    comm = _world(comm)
    rt = runtime(comm)
    address = _address(rt, single_host=_on_one_host(comm))
    with _reserve_port() as sock:
        workers = comm.allgather(f"{address}:{sock.getsockname()[1]}")
    return {"cluster": {"worker": workers}, "task": {"type": "worker", "index": rt.rank}}


def torch_init(comm: Any = None, backend: str = "gloo", timeout_s: float = 300.0) -> Any:
    """Initialise ``torch.distributed`` from the MPI world and return the process group.

    Rank 0 chooses the master address and a free port and broadcasts them; rank
    and world size come from MPI, so no launcher-specific variables are needed.
    """
    comm = _world(comm)
    import datetime

    import torch.distributed as dist

    rt = runtime(comm)
    address = _address(rt, single_host=_on_one_host(comm))
    if rt.rank == 0:
        with _reserve_port() as sock:
            master: tuple[str, int] | None = (address, int(sock.getsockname()[1]))
    else:
        master = None
    addr, port = comm.bcast(master, root=0)
    os.environ["MASTER_ADDR"] = addr
    os.environ["MASTER_PORT"] = str(port)
    os.environ["RANK"] = str(rt.rank)
    os.environ["WORLD_SIZE"] = str(rt.size)
    os.environ["LOCAL_RANK"] = str(rt.local_rank)
    dist.init_process_group(
        backend=backend,
        init_method=f"tcp://{addr}:{port}",
        rank=rt.rank,
        world_size=rt.size,
        timeout=datetime.timedelta(seconds=timeout_s),
    )
    return dist.group.WORLD


def prefer_mpi_symbols() -> None:
    """Put Open MPI's own library first in the process's global symbol scope.

    Open MPI 4.1's PyPI wheel and TensorFlow both export hwloc's functions; TensorFlow
    loads its copy globally, so without this Open MPI's finalize calls TensorFlow's hwloc
    and crashes (SIGSEGV in ``MPI_Finalize``). Call it after importing ``mpi4py.MPI`` and
    before importing TensorFlow. Does nothing for an MPI without that library.
    """
    import ctypes

    try:
        ctypes.CDLL("libopen-pal.so.40", mode=os.RTLD_NOLOAD | os.RTLD_GLOBAL)
    except OSError:
        pass
