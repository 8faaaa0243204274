"""The SageMaker runner: upload the source, create the training job, follow it to the end."""
