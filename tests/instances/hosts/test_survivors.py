"""The pod's survivors, seen as PID 1 of a real PID namespace sees them (its own /proc)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from smmpi.instances.hosts.survivors import is_instance_init, is_instance_sshd, status_of

#: Run as PID 1 of a new PID namespace: a child that outlives nothing yet, then one left alone.
PROBE = """
import json, os, subprocess, sys
from smmpi.instances.hosts.survivors import let_survivors_record, survivors
alone = survivors(set())
left = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
seen = survivors(set())
held = survivors({left.pid})
let_survivors_record(set(), wait=0.2)  # waits out its moment: the sleeper does not end
print(json.dumps({"pid": os.getpid(), "alone": sorted(alone), "seen": sorted(seen),
                  "held": sorted(held), "left": left.pid}))
"""


def test_status_of_reads_this_process_and_nothing_once_gone() -> None:
    mine = status_of(os.getpid())
    assert mine["Pid"] == str(os.getpid()) and mine["Name"]
    assert not is_instance_init(os.getpid())  # this machine's PID namespace, not an instance's
    assert not is_instance_sshd(os.getpid(), set())
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    assert status_of(child.pid) == {}


def test_pid_1_of_a_pod_finds_what_outlived_the_command() -> None:
    done = subprocess.run(
        ["unshare", "--pid", "--fork", "--mount-proc", sys.executable, "-c", PROBE],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert seen["pid"] == 1 and seen["alone"] == []
    assert seen["seen"] == [seen["left"]]  # a process besides PID 1 and the holders
    assert seen["held"] == []  # a holder stays until the pod ends: no survivor
