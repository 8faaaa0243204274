"""The test cluster's files: slurm.conf, the controller's start script, the command wrappers
(checked by the real /bin/sh)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from smmpi.instances.slurmcluster.layout import (
    CONTROLLER,
    PARTITION,
    Shape,
    slurm_conf,
    start_script,
    wrapper,
)

SBIN = {
    "munged": "/usr/sbin/munged",
    "slurmctld": "/usr/sbin/slurmctld",
    "slurmd": "/usr/sbin/slurmd",
}


def test_slurm_conf_names_every_node_and_keeps_every_file_in_the_folder(tmp_path: Path) -> None:
    shape = Shape(tmp_path / "cluster dir", nodes=3, cpus=2)
    assert shape.hosts == (CONTROLLER, "node1", "node2", "node3")
    conf = dict(line.split("=", 1) for line in slurm_conf(shape).splitlines())
    assert conf["NodeName"] == "node[1-3] CPUs=2 State=UNKNOWN"
    assert conf["PartitionName"].startswith(f"{PARTITION} Nodes=node[1-3] Default=YES")
    for key in ("StateSaveLocation", "SlurmctldLogFile", "JobCompLoc", "SlurmdSpoolDir"):
        assert conf[key].startswith(str(shape.folder)), key
    one = Shape(tmp_path, nodes=1, cpus=4)
    assert "NodeName=node1 CPUs=4 State=UNKNOWN" in slurm_conf(one)


def test_the_start_script_is_valid_sh_and_starts_one_slurmd_per_node(tmp_path: Path) -> None:
    shape = Shape(tmp_path / "it's here", nodes=2, cpus=1)
    script = start_script(shape, SBIN)
    assert subprocess.run(["sh", "-n", "-c", script], check=False).returncode == 0
    assert script.count("/usr/sbin/slurmd -D -N node") == 2


def test_a_wrapper_passes_every_word_intact_to_the_controller(tmp_path: Path) -> None:
    shape = Shape(tmp_path, nodes=1, cpus=1)
    agent = Path(shape.path("agent"))  # stands for the launch agent: runs the line on the host
    agent.write_text('#!/bin/sh\n[ "$1" = slurmctl ] || exit 9\nexec sh -c "$2"\n')
    real = tmp_path / "sbatch"
    real.write_text(
        f"#!{sys.executable}\nimport json, os, sys\n"
        "print(json.dumps([os.getcwd(), os.environ['SLURM_CONF'], *sys.argv[1:]]))\n"
    )
    for path in (agent, real):
        path.chmod(0o755)
    here = os.readlink("/proc/self/ns/net")  # this machine's network: not inside the cluster
    command = tmp_path / "bin-sbatch"
    command.write_text(wrapper(shape, "sbatch", str(real), here))
    command.chmod(0o755)
    words = ["--wrap", "echo 'quoted' \"double\" $HOME `x`", "a b", ""]
    done = subprocess.run(
        [str(command), *words], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    cwd, conf, *got = json.loads(done.stdout)
    assert (cwd, conf, got) == (str(tmp_path), shape.path("slurm.conf"), words)
