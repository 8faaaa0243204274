"""Runners: what a job request becomes. Each one implements :class:`base.Runner`.

``plan`` prints it, ``local`` runs it here as N emulated hosts, ``sagemaker``
submits it. A new runner is one more package here.
"""
