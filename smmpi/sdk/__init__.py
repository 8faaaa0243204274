"""The only code that touches the SageMaker SDK: MPIJob -> estimator -> request."""
