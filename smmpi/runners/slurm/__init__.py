"""The SLURM runner: the same MPIJob as a batch script, submitted and operated with SLURM's
commands.

``script`` turns a job into the batch script (a pure function), ``profile`` reads the
cluster's settings from the config file, ``commands`` runs SLURM's own commands, ``submit``
checks and submits, ``operate`` answers status, logs and stop.
"""
