"""A local job's owner record: this process by pid and start time, and whether it still runs."""

from __future__ import annotations

import os
import subprocess
import sys

from smmpi.ops.owners import owner_alive, owner_record


def test_this_process_is_its_own_live_owner() -> None:
    record = owner_record()
    pid, started = record.split()
    assert record.endswith("\n") and pid == str(os.getpid()) and started.isdigit()
    assert owner_alive(record)
    assert owner_alive(pid)  # a record from before start times were kept: the pid alone


def test_a_gone_or_reused_pid_is_no_owner() -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    assert not owner_alive(f"{child.pid} 1\n")  # gone (reaped)
    pid, started = owner_record().split()
    assert not owner_alive(f"{pid} {int(started) + 1}")  # the same pid, another process


def test_a_malformed_record_is_no_owner() -> None:
    for record in ("", "\n", "abc 12", "-1 5"):
        assert not owner_alive(record), record
