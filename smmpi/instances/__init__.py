"""Making N emulated instances on this machine.

``hosts`` is the isolated-hosts library (each instance a host of its own in Linux
namespaces), ``slurmcluster`` a real SLURM cluster on such hosts (``smmpi slurm``), and
``machine`` what this machine can give the instances (GPUs, cores). Runners use these rooms;
they use no runner.
"""
