"""Operating submitted jobs: status, listing, CloudWatch logs, artifacts, the infra stack."""
