"""A worker's /etc/environment holds what its toolkit writes there (SageMaker's workers get
the toolkit's whole environment in it; the content is held to the real toolkit's by the
oracle); algo-1 gets none, and this machine's file is untouched."""

from __future__ import annotations

import base64
import shutil
from pathlib import Path

from tests.helpers import base_env, smmpi, write

PROBE = """\
import base64, socket
from mpi4py import MPI
c = MPI.COMM_WORLD
text = open("/etc/environment", "rb").read()
for r in range(c.size):
    if r == c.rank:
        print("ETC", socket.gethostname(), "=" + base64.b64encode(text).decode(), flush=True)
    c.Barrier()
"""


def test_each_worker_has_its_toolkits_etc_environment(tmp_path: Path) -> None:
    env = base_env(tmp_path)
    env["SMMPI_ISOLATION"] = "hosts"
    machine = Path("/etc/environment").read_bytes()
    done = smmpi(
        ["run", str(write(tmp_path / "etc.py", PROBE)), "-N", "3", "-n", "1", "--keep"], env
    )
    assert done.returncode == 0, done.stderr
    kept = Path(done.stderr.split("host trees kept under ", 1)[1].split()[0])
    try:
        seen = {}
        for line in done.stdout.splitlines():
            _, host, text = line.split("<stdout>:", 1)[1].split()
            seen[host] = base64.b64decode(text[1:])
        assert seen["algo-1"] == machine
        for host in ("algo-2", "algo-3"):
            written = (kept / host / "etc" / "environment").read_bytes()
            assert b"SM_CURRENT_HOST=" in written
            assert seen[host] == machine + written
        assert not (kept / "algo-1" / "etc" / "environment").exists()
    finally:
        shutil.rmtree(kept)
    assert Path("/etc/environment").read_bytes() == machine
