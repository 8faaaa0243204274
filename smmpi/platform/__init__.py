"""What SageMaker does outside the container: the ``/opt/ml`` tree, channels, status files.

``layout`` lays out each emulated host's ``/opt/ml`` (its config files and environment),
``inputs`` fills the input channels, ``container_files`` writes the files SageMaker reads
back (failure reasons, checkpoints, model and output archives), ``opt_ml`` names the paths.
Runners use these rooms; they use no runner.
"""
