"""A pure model of SageMaker's training container (the sagemaker-training toolkit).

From a CreateTrainingJob request: the hosts, processes per host, program and
arguments (:mod:`request`), every host's ``SM_*`` environment and ``/opt/ml``
tree (:mod:`environment`), and the ``mpirun`` argv (:mod:`mpirun`).
"""
