"""What this machine brings to a run that an instance would not: its shell's Open MPI
settings (left out, :func:`smmpi.platform.layout.launch_env`) and its GPUs (shared out).

On SageMaker each instance has GPUs of its own (SM_NUM_GPUS, the instance type's count)
and sees all of them. Here every emulated instance runs on this machine, which may have
fewer: where it has enough, each instance gets its own share (``CUDA_VISIBLE_DEVICES``
listing that instance's devices, as separate instances have separate GPUs); where it has
not, every instance sees all of this machine's, and the run says so in its first lines.
SM_NUM_GPUS stays the instance type's, as on SageMaker.

The share is a pure function of the device list (:func:`share_gpus`); the list itself is
read from ``$SMMPI_GPUS`` (device ids separated by commas, empty for none), else
``nvidia-smi -L``, else ``/proc/driver/nvidia/gpus``.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from smmpi.bounded import FileRefused, read_regular
from smmpi.platform.layout import left_out_mpi
from smmpi.toolkit.images import num_gpus
from smmpi.toolkit.shape import JobShape

#: The device list, when set: ids as CUDA_VISIBLE_DEVICES takes them (``0,1`` or UUIDs).
OVERRIDE = "SMMPI_GPUS"
VISIBLE = "CUDA_VISIBLE_DEVICES"
_PROC = Path("/proc/driver/nvidia/gpus")
_UUID = re.compile(r"\bUUID:\s*(GPU-[0-9A-Za-z-]+)")
_SHOWN = 4  # instances named in the line; the rest are "..."


@dataclass(frozen=True)
class GpuShare:
    """Each instance's devices (None: every instance sees all of them), and the line to say."""

    devices: tuple[tuple[str, ...], ...] | None
    line: str | None


def share_gpus(
    devices: Sequence[str], instances: int, per_instance: int, instance_type: str = ""
) -> GpuShare:
    """Instance k (from 0) gets ``devices[k*per_instance:(k+1)*per_instance]`` where the
    machine has ``instances * per_instance`` of them; otherwise all share the machine's."""
    if per_instance <= 0:
        return GpuShare(None, None)
    kind = instance_type or "the instance type"
    head = f"smmpi: {kind} has {per_instance} GPU(s) per instance (SM_NUM_GPUS={per_instance})"
    if not devices:
        return GpuShare(None, f"{head}, this machine none: CUDA finds no device in any rank")
    if len(devices) < instances * per_instance:
        return GpuShare(
            None,
            f"{head}, this machine {len(devices)}: the {instances} emulated instance(s) "
            f"all see this machine's {len(devices)}, not {per_instance} each of their own",
        )
    shares = tuple(
        tuple(devices[k * per_instance : (k + 1) * per_instance]) for k in range(instances)
    )
    named = "; ".join(f"algo-{k + 1} {','.join(s)}" for k, s in enumerate(shares[:_SHOWN]))
    more = "; ..." if instances > _SHOWN else ""
    return GpuShare(
        shares,
        f"{head}, this machine {len(devices)}: each emulated instance sees its own "
        f"({VISIBLE}: {named}{more})",
    )


def _from_nvidia_smi() -> list[str] | None:
    tool = shutil.which("nvidia-smi")
    if tool is None:
        return None
    try:
        out = subprocess.run([tool, "-L"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    if out.returncode != 0:
        return None
    found = []
    for line in out.stdout.splitlines():
        if line.startswith("GPU "):  # MIG devices are indented lines under their GPU
            m = _UUID.search(line)
            found.append(m.group(1) if m else line.split(":", 1)[0].split()[-1])
    return found


def _from_proc() -> list[str]:
    try:
        folders = sorted(_PROC.iterdir())
    except OSError:
        return []
    found = []
    for index, folder in enumerate(folders):
        try:
            text = read_regular(folder / "information", "gpus", 64 * 1024).decode(errors="replace")
        except FileRefused:
            text = ""
        m = _UUID.search(text)
        found.append(m.group(1) if m else str(index))
    return found


@functools.lru_cache(maxsize=1)
def _detected() -> tuple[str, ...]:
    found = _from_nvidia_smi()
    return tuple(found if found is not None else _from_proc())


def machine_gpus() -> tuple[str, ...]:
    """This machine's GPUs, as ids CUDA_VISIBLE_DEVICES takes (``$SMMPI_GPUS`` when set)."""
    given = os.environ.get(OVERRIDE)
    if given is not None:
        return tuple(d.strip() for d in given.split(",") if d.strip())
    return _detected()


def gpu_share(shape: JobShape) -> GpuShare:
    """The share for ``shape``'s instances on this machine."""
    per_instance = num_gpus(shape.instance_type)
    if VISIBLE in shape.environment:  # the job chose its devices itself: every instance's
        if per_instance <= 0:
            return GpuShare(None, None)
        chosen = shape.environment[VISIBLE]
        return GpuShare(
            None, f"smmpi: every emulated instance sees {VISIBLE}={chosen}, the job's own"
        )
    if per_instance <= 0:
        return hide_gpus(machine_gpus(), shape.instances, shape.instance_type)
    return share_gpus(machine_gpus(), shape.instances, per_instance, shape.instance_type)


def hide_gpus(devices: Sequence[str], instances: int, instance_type: str) -> GpuShare:
    """A CPU instance type on a machine with GPUs: no instance sees them, as on SageMaker,
    where such an instance has none (CUDA_VISIBLE_DEVICES empty), and the run says so."""
    if not devices:
        return GpuShare(None, None)
    return GpuShare(
        tuple(() for _ in range(instances)),
        f"smmpi: {instance_type or 'the instance type'} has no GPU (SM_NUM_GPUS=0): the "
        f"emulated instances see none of this machine's {len(devices)} ({VISIBLE} empty); "
        "choose a GPU instance type (--instance-type ml.g5.xlarge) to use them",
    )


def gpu_env(shape: JobShape, host: str) -> dict[str, str]:
    """``CUDA_VISIBLE_DEVICES`` for ``host``, where it has devices of its own; else nothing."""
    share = gpu_share(shape)
    if share.devices is None or host not in shape.hosts:
        return {}
    return {VISIBLE: ",".join(share.devices[shape.hosts.index(host)])}


def start_notes(shape: JobShape, environ: Mapping[str, str]) -> list[str]:
    """The lines a run says first about this machine: the Open MPI settings of this shell
    that it leaves out, and the instance type's GPUs beside this machine's."""
    lines = [left_out_mpi(environ), gpu_share(shape).line]
    return [line for line in lines if line]
