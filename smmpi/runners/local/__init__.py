"""Docker-free emulation of a SageMaker MPI job: N hosts x n processes on this machine."""
