"""The training instance type: the one check of it, whoever asks (MPIJob, ``smmpi run``).

A malformed or unknown type is refused with one message, naming the closest types SageMaker
knows; a ppn above the type's vCPUs is a note, not an error (processes share cores).
"""

from __future__ import annotations

import difflib

from smmpi.aws.facts import INSTANCE_TYPE_RE, known_instance_types, vcpus
from smmpi.errors import BadInput

DEFAULT_INSTANCE_TYPE = "ml.c5.2xlarge"  # 8 vCPUs, as in the reference run (seed 004)
INSTANCE_TYPE_RULE = "a SageMaker training instance type starting with 'ml.', e.g. ml.c5.2xlarge"


def check_instance_type(value: object) -> str:
    """``value`` if SageMaker trains on it; else one line naming the field and the closest types."""
    if not isinstance(value, str) or not INSTANCE_TYPE_RE.match(value):
        raise BadInput("instance_type", value, INSTANCE_TYPE_RULE)
    if value == DEFAULT_INSTANCE_TYPE:  # in botocore's enum (a test checks): skip its ~0.1 s load
        return value
    known = known_instance_types()
    if known is not None and value not in known:
        close = difflib.get_close_matches(value, sorted(known), n=3)
        hint = f" (closest: {', '.join(close)})" if close else ""
        raise BadInput("instance_type", value, INSTANCE_TYPE_RULE + hint)
    return value


def cores_note(instance_type: str, ppn: int) -> str | None:
    """A note when ``ppn`` processes exceed the vCPUs of ``instance_type``."""
    cpus = vcpus(instance_type)
    if cpus is not None and ppn > cpus:
        return f"ppn {ppn} exceeds the {cpus} vCPUs of {instance_type}: processes will share cores"
    return None
