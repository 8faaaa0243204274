"""Warm instances: isolated hosts kept between runs of the same shape (``smmpi run --keep-warm``).

A *keeper* (keeper.py), started by the first run in a session of its own, holds each emulated
instance's network and UTS namespaces (hostname algo-k, eth0 on the private bridge) and ends
itself after the given seconds without a run. The next run of the same shape takes a *lease*
(lease.py) on it and its pod joins those namespaces instead of making them; everything else is
the run's own, as before: a fresh mount namespace (its own /opt/ml, /tmp, /etc), IPC and PID
namespaces, and its own processes. Nothing of a job but its network's name and addresses is
seen by the next one.
"""
