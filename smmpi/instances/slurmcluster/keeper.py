"""``python -m smmpi.instances.slurmcluster.keeper FOLDER``: holds the cluster's hosts while up.

It starts the pod (the isolated hosts) with the controller's start script and waits for it.
SIGTERM, SIGINT or SIGHUP stop the daemons; the pod dies with this process however it ends
(PR_SET_PDEATHSIG), and with the pod every daemon, namespace, link and mount. With
``SMMPI_SLURM_OWNER`` set to a process id, the cluster also stops when that process ends (a
test session that starts a cluster takes it with it, however the session ends).
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import threading
from pathlib import Path

from smmpi.bounded import CONFIG_MAX_BYTES, read_regular
from smmpi.instances.hosts import launch
from smmpi.instances.slurmcluster.layout import Shape

STATE = "cluster.json"
OWNER = "SMMPI_SLURM_OWNER"
PATH = "/usr/sbin:/usr/bin:/sbin:/bin"


def shape_of(folder: Path) -> Shape:
    data = json.loads(read_regular(folder / STATE, "cluster state", CONFIG_MAX_BYTES))
    return Shape(folder, int(data["nodes"]), int(data["cpus"]))


def pod(shape: Shape) -> launch.Pod:
    trees = tuple(shape.folder / "ml" / host for host in shape.hosts)
    return launch.Pod(shape.hosts, trees, shape.folder, keep=(shape.folder,))


def main(argv: list[str]) -> int:
    shape = shape_of(Path(argv[1]))
    held = launch.start(
        pod(shape), ["/bin/sh", shape.path("cluster.sh")], {"PATH": PATH}, cwd=str(shape.folder)
    )

    def stop(_signo: int, _frame: object) -> None:
        held.send_signal(signal.SIGTERM)

    for signo in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signo, stop)
    owner = os.environ.get(OWNER, "")
    if owner.isdigit():
        threading.Thread(target=_stop_after, args=(int(owner), held), daemon=True).start()
    try:
        return held.wait()
    except BaseException:
        held.kill()
        raise


def _stop_after(owner: int, held: subprocess.Popen[bytes]) -> None:
    """Stop the cluster once process ``owner`` has ended (at once if it is gone already)."""
    try:
        fd = os.pidfd_open(owner)
    except OSError:
        held.send_signal(signal.SIGTERM)
        return
    select.select([fd], [], [])
    held.send_signal(signal.SIGTERM)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
