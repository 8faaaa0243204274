"""Isolated mode: each emulated instance is a host of its own (hostname, eth0, /opt/ml).

Linux namespaces make one machine look like SageMaker's cluster: one UTS, network and
mount namespace per instance, a private bridge between their eth0s, and Open MPI's
``plm_rsh_agent`` pointing at a launch agent that enters an instance's namespaces, so
the container's own mpirun line runs unchanged. See pod.py for the process tree and
its lifetime, plan.py for addresses and names.
"""
