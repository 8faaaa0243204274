"""What the sagemaker-training toolkit prints on a worker instance (algo-2..N) of an MPI job.

On SageMaker each instance's CloudWatch stream carries its own container's
output. A worker's ranks print through mpirun on algo-1, so the worker's own
stream holds the toolkit's ``WorkerRunner`` lines (sagemaker_training/mpi.py):
it starts, waits for algo-1's sshd, starts its own, waits for ``orted`` to
end, looks for the status file algo-1 writes when mpirun succeeded, and ends.
Each line is in the toolkit's logging format
(``%(asctime)s %(name)-12s %(levelname)-8s %(message)s``).
"""

from __future__ import annotations

import time

LOGGER = "sagemaker-training-toolkit"

STARTING = (
    "Starting MPI run as worker node.",
    "Waiting for MPI Master to create SSH daemon.",
    "MPI Master online, creating SSH daemon.",
    "Writing environment variables to /etc/environment for the MPI process.",
    "Waiting for MPI process to finish.",
)


def line(message: str, when: float | None = None) -> str:
    """``message`` as the toolkit's logger prints it at ``when`` (now by default)."""
    moment = time.time() if when is None else when
    stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(moment))
    msecs = int((moment - int(moment)) * 1000)  # as logging takes them (1700000935.166: 165)
    return f"{stamp},{msecs:03d} {LOGGER:<12} {'INFO':<8} {message}"


def starting() -> list[str]:
    """A worker's lines from its start to the wait for ``orted`` (algo-1's mpirun started it)."""
    return [line(message) for message in STARTING]


def ending(host: str, succeeded: bool) -> list[str]:
    """A worker's lines once ``orted`` exited: algo-1 writes the status file only when
    mpirun succeeded; without it the worker gives up when algo-1 is gone."""
    found = (
        "MPI training job status file found. Exit gracefully"
        if succeeded
        else "Status file not found. Exiting..."
    )
    messages = [
        "Orted process exited",
        f"Begin looking for status file on {host}",
        found,
        "End looking for status file",
        "MPI process finished.",
    ]
    if succeeded:
        messages.append("Reporting training SUCCESS")
    return [line(message) for message in messages]
