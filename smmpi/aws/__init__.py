"""The SageMaker and S3 APIs as smmpi uses them: facts, clients, errors, the request hook."""
