"""The container's own mpirun line under Open MPI 4.1, across isolated instances."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from smmpi.instances.hosts import launch
from tests.instances.hosts.conftest import ENV, make_pod
from tests.instances.hosts.footprint import Machine

BIN = Path(sys.executable).parent
PROBE = Path(__file__).with_name("probe.py")
DEMO = Path(__file__).parent / "seed004" / "mpi_demo.py"
ENV_41 = {
    **ENV,
    "PATH": f"{BIN}:{ENV['PATH']}",
    "PYTHONPATH": "",
    "LD_LIBRARY_PATH": "",
    "OMPI_ALLOW_RUN_AS_ROOT": "1",
    "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
}


def container_line(hosts: int, ppn: int, agent: Path, program: str = "probe.py") -> list[str]:
    """Seed 004's mpirun line, with the documented substitutions only.

    The interpreter is this venv's; the gethostname shim (LD_PRELOAD) is not needed, the
    UTS namespace answers; ``plm_rsh_agent`` is the launch agent instead of ssh.
    """
    host_list = ",".join(f"algo-{k}:{ppn}" for k in range(1, hosts + 1))
    return [
        str(BIN / "mpirun"),
        *("--host", host_list, "-np", str(hosts * ppn)),
        *("--allow-run-as-root", "--display-map", "--tag-output"),
        *("-mca", "btl_tcp_if_include", "eth0", "-mca", "oob_tcp_if_include", "eth0"),
        *("-mca", "plm_rsh_no_tree_spawn", "1", "-bind-to", "none", "-map-by", "slot"),
        *("-mca", "pml", "ob1", "-mca", "btl", "^openib"),
        *("-mca", "orte_abort_on_non_zero_status", "1"),
        *("-mca", "plm_rsh_agent", str(agent)),
        *("-x", "NCCL_MIN_NRINGS=4", "-x", "NCCL_SOCKET_IFNAME=eth0", "-x", "NCCL_DEBUG=INFO"),
        *("-x", "LD_LIBRARY_PATH", "-x", "PATH", "-x", "PYTHONPATH"),
        *(sys.executable, "-m", "mpi4py", program, "--model_dir", "/opt/ml/model"),
    ]


def test_container_line_sees_sagemakers_cluster(run_dir: Path, machine: Machine) -> None:
    pod = make_pod(run_dir, 3)
    shutil.copy(PROBE, pod.opt_ml[0] / "code" / "probe.py")
    for tree in pod.opt_ml[1:]:  # the toolkit gives every instance the same code
        shutil.copy(PROBE, tree / "code" / "probe.py")
    argv = container_line(3, 2, launch.agent_path(pod))
    proc = launch.start(pod, argv, ENV_41, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = proc.communicate(timeout=240)
    assert proc.returncode == 0, err.decode()
    lines = [ln for ln in out.decode().splitlines() if "<stdout>:{" in ln]
    seen = sorted(
        (json.loads(ln.split("<stdout>:", 1)[1]) for ln in lines), key=lambda s: s["rank"]
    )
    assert [s["rank"] for s in seen] == list(range(6))
    for s in seen:
        host = f"algo-{s['rank'] // 2 + 1}"
        assert s["hostname"] == s["processor"] == host
        assert (s["local_rank"], s["local_size"], s["shared_size"]) == (s["rank"] % 2, 2, 2)
        assert s["algo-2"] == "198.18.0.2"
        assert s["sum"] == 15.0
        assert s["eth0_bytes"] > 8 << 20  # the 8 MiB Allreduce crossed eth0: the TCP btl
        assert s["library"] == "Open MPI v4.1.8"
        assert s["argv"] == ["--model_dir", "/opt/ml/model"]
    for k, tree in enumerate(pod.opt_ml):
        written = sorted(p.name for p in (tree / "model").iterdir())
        assert written == [f"written-by-rank-{2 * k}.txt", f"written-by-rank-{2 * k + 1}.txt"]


def test_seed_004_demo_runs_as_submitted(run_dir: Path, machine: Machine) -> None:
    pod = make_pod(run_dir, 3)
    for tree in pod.opt_ml:
        shutil.copy(DEMO, tree / "code" / "mpi_demo.py")
    argv = container_line(3, 2, launch.agent_path(pod), "mpi_demo.py")
    proc = launch.start(pod, argv, ENV_41, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = proc.communicate(timeout=240)
    assert proc.returncode == 0, err.decode()
    text = out.decode()
    assert "[1,0]<stdout>:Number of MPI processes that will talk to each other: 6" in text
    assert "[1,1]<stdout>:I received some data: [0 1 2]" in text
    for rank in range(6):
        assert f"[1,{rank}]<stdout>:Data at rank {rank} [0 1 2 3 4 5 6 7 8 9]" in text
        assert f"[1,{rank}]<stdout>:I am rank {rank}, my avg is: " in text
