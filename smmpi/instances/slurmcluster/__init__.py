"""A real SLURM cluster on this machine: munged, slurmctld and one slurmd per emulated node.

Every node is an isolated host (:mod:`smmpi.instances.hosts`): its own hostname, network,
mount namespace and /tmp, on a private bridge. ``layout`` writes the cluster's files (pure
text), ``keeper`` holds the hosts while the cluster is up, ``cluster`` starts, stops and
describes it (``smmpi slurm up|down|status``). A library: it uses no runner.
"""
