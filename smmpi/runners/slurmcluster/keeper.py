"""``python -m smmpi.runners.slurmcluster.keeper FOLDER``: holds the cluster's hosts while it is up.

It starts the pod (the isolated hosts) with the controller's start script and waits for it.
SIGTERM, SIGINT or SIGHUP stop the daemons; the pod dies with this process however it ends
(PR_SET_PDEATHSIG), and with the pod every daemon, namespace, link and mount.
"""

from __future__ import annotations

import json
import signal
import sys
from pathlib import Path

from smmpi.bounded import CONFIG_MAX_BYTES, read_regular
from smmpi.runners.hosts import launch
from smmpi.runners.slurmcluster.layout import Shape

STATE = "cluster.json"
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
    try:
        return held.wait()
    except BaseException:
        held.kill()
        raise


if __name__ == "__main__":
    sys.exit(main(sys.argv))
