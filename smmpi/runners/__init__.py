"""Runners: where a job goes. Each one implements :class:`base.Runner`, found by name in
:mod:`.registry`.

``plan`` prints its request, ``local`` runs it here as N emulated hosts, ``sagemaker``
submits it, ``slurm`` runs the same job on a SLURM cluster. A new runner is one more package
here and one more line in the registry.
"""
