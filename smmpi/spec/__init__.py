"""MPIJob and every check of its fields, SageMaker's own limits included."""

from smmpi.aws.facts import SMMPI_TAG_KEY, SMMPI_TAG_VALUE, vcpus
from smmpi.spec.checks import (
    UnknownField,
    check_vpc_ids,
    parse_inputs,
    parse_mpi_options,
)
from smmpi.spec.instance_type import DEFAULT_INSTANCE_TYPE
from smmpi.spec.job import (
    DEFAULT_MAX_RUN,
    MPIJob,
    require_s3_inputs,
)
from smmpi.spec.pairs import parse_pairs
from smmpi.spec.versions import DEFAULT_VERSIONS, FRAMEWORKS, resolve_versions, training_versions

__all__ = [
    "DEFAULT_INSTANCE_TYPE",
    "DEFAULT_MAX_RUN",
    "DEFAULT_VERSIONS",
    "FRAMEWORKS",
    "SMMPI_TAG_KEY",
    "SMMPI_TAG_VALUE",
    "MPIJob",
    "UnknownField",
    "check_vpc_ids",
    "parse_inputs",
    "parse_mpi_options",
    "parse_pairs",
    "require_s3_inputs",
    "resolve_versions",
    "training_versions",
    "vcpus",
]
