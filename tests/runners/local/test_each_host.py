"""Every host's tree laid out at once: results in the hosts' order, and on a failure no host
begun after it and none still being written when it is raised."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import pytest

from smmpi.platform.layout import each_host
from smmpi.toolkit.hosts import HostDirs


def test_the_hosts_are_laid_out_at_once_and_returned_in_order(tmp_path: Path) -> None:
    seen: set[str] = set()
    both = threading.Barrier(2, timeout=10)

    def work(host: str) -> HostDirs:
        seen.add(threading.current_thread().name)
        if host in ("algo-1", "algo-2"):
            both.wait()  # algo-1 and algo-2 at the same time, or a BrokenBarrierError
        return HostDirs(tmp_path / host)

    hosts = [f"algo-{k}" for k in range(1, 7)]
    assert [d.root for d in each_host(hosts, work)] == [tmp_path / h for h in hosts]
    assert seen == {"smmpi-layout"}


def test_a_failure_stops_new_hosts_and_waits_for_those_under_way(tmp_path: Path) -> None:
    begun: list[str] = []
    ended: list[str] = []

    def work(host: str) -> HostDirs:
        begun.append(host)
        if host == "algo-1":
            raise ValueError("algo-1 refused")
        time.sleep(0.5)  # under way when algo-1 fails
        ended.append(host)
        return HostDirs(tmp_path / host)

    hosts = [f"algo-{k}" for k in range(1, 40)]
    with pytest.raises(ValueError, match="algo-1 refused"):
        each_host(hosts, work)
    assert sorted(ended) == sorted(h for h in begun if h != "algo-1")  # all it began ended
    assert len(begun) < len(hosts)


def test_an_interrupt_waits_for_the_hosts_under_way_and_begins_no_other(tmp_path: Path) -> None:
    """SIGTERM raised as KeyboardInterrupt (as ``submit --local`` has it), while the main thread
    waits: each_host raises it only once every host begun has ended, and begins no other."""
    begun: list[str] = []
    ended: list[str] = []

    def work(host: str) -> HostDirs:
        begun.append(host)
        if host == "algo-2":
            os.kill(os.getpid(), signal.SIGTERM)  # the worker threads block it: main gets it
        time.sleep(0.5)
        ended.append(host)
        return HostDirs(tmp_path / host)

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        with pytest.raises(KeyboardInterrupt):
            each_host([f"algo-{k}" for k in range(1, 40)], work)
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert sorted(ended) == sorted(begun) and len(begun) < 39
