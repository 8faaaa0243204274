"""A SLURM profile of the config file: where the cluster is and what every batch script says.

The config file's ``slurm_profiles`` maps a name to an object with any of: ``conf`` (the
cluster's ``SLURM_CONF``), ``bin`` (the folder of its commands; default: PATH),
``partition``, ``account``, ``time`` (SLURM's time limit), ``modules`` (lines such as
``module load mpi/OpenMPI``), ``activate`` (a Python environment's folder), ``sbatch``
(further ``#SBATCH`` options), ``workdir`` (a folder on the cluster's shared filesystem;
default ``~/smmpi-slurm``), ``launch`` (``srun``, ``mpirun`` or ``auto``) and ``jobcomp`` (the
cluster's ``jobcomp/filetxt`` file where this machine sees it: a followed job's end is seen as
slurmctld writes it).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field, replace
from typing import Any

from smmpi import config
from smmpi.errors import BadInput

KEY = "slurm_profiles"
DEFAULT = "default"
_STRINGS = (
    *("conf", "bin", "partition", "account", "time", "activate", "workdir", "launch"),
    "jobcomp",
)
_LISTS = ("modules", "sbatch")
LAUNCH_CHOICES = ("auto", "srun", "mpirun")
TIME_RULE = (
    "a SLURM time limit above zero: MINUTES, MINUTES:SECONDS, HOURS:MINUTES:SECONDS, "
    "DAYS-HOURS, DAYS-HOURS:MINUTES or DAYS-HOURS:MINUTES:SECONDS"
)
_TIME = re.compile(r"^(?:(\d+)-(\d+)(?::(\d+)(?::(\d+))?)?|(\d+)(?::(\d+)(?::(\d+))?)?)$")
_NAME = re.compile(r"^[A-Za-z0-9_.+-]{1,64}$")


@dataclass(frozen=True)
class Profile:
    name: str = DEFAULT
    conf: str | None = None
    bin: str | None = None
    partition: str | None = None
    account: str | None = None
    time: str | None = None
    modules: tuple[str, ...] = ()
    activate: str | None = None
    sbatch: tuple[str, ...] = ()
    workdir: str = field(default_factory=lambda: os.path.expanduser("~/smmpi-slurm"))
    launch: str = "auto"
    jobcomp: str | None = None


def check_time(value: str, field_name: str = "time") -> str:
    """``value`` if it is a SLURM time limit above zero (``0`` means none to SLURM: refused)."""
    match = _TIME.match(value.strip())
    numbers = [int(n) for n in match.groups() if n is not None] if match else []
    if not match or not any(numbers):
        raise BadInput(field_name, value, TIME_RULE)
    return value.strip()


def _check_name(key: str, value: str) -> None:
    if key in ("partition", "account") and not _NAME.match(value):
        raise BadInput(key, value, "letters, digits and _.+- (at most 64)")
    if key == "launch" and value not in LAUNCH_CHOICES:
        raise BadInput("launch", value, " | ".join(LAUNCH_CHOICES))
    if key == "time":
        check_time(value)
    if key == "jobcomp" and not os.path.isabs(value):
        raise BadInput("jobcomp", value, "an absolute path (the cluster's JobCompLoc)")


def _fields(name: str, raw: Any) -> dict[str, Any]:
    where = f"{KEY}.{name}"
    if not isinstance(raw, dict):
        raise BadInput(where, raw, "an object of profile settings")
    unknown = sorted(set(raw) - set(_STRINGS) - set(_LISTS))
    if unknown:
        raise BadInput(f"{where}.{unknown[0]}", raw[unknown[0]], ", ".join(_STRINGS + _LISTS))
    fields: dict[str, Any] = {}
    for key, value in raw.items():
        if key in _LISTS:
            if not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
                raise BadInput(f"{where}.{key}", value, "a list of strings")
            fields[key] = tuple(value)
        elif not isinstance(value, str) or not value.strip():
            raise BadInput(f"{where}.{key}", value, "a non-empty string")
        else:
            _check_name(key, value)
            fields[key] = value
    return fields


def load(name: str | None = None, **overrides: str | None) -> Profile:
    """Profile ``name`` (``default``, which may be absent), then the flags' ``overrides``."""
    profiles = config.load().get(KEY) or {}
    if not isinstance(profiles, dict):
        raise BadInput(KEY, profiles, "an object: profile name -> settings")
    wanted = name or DEFAULT
    if name and name not in profiles:
        raise BadInput("--profile", name, ", ".join(sorted(profiles)) or "no profile is configured")
    profile = (
        Profile(wanted, **_fields(wanted, profiles[wanted])) if wanted in profiles else Profile()
    )
    given: dict[str, Any] = {k: v for k, v in overrides.items() if v is not None}
    for key, value in given.items():
        _check_name(key, value)
    return replace(profile, **given)


def save(name: str, settings: dict[str, Any]) -> None:
    """Write profile ``name`` into the config file (the test cluster saves its own)."""
    profiles = dict(config.load().get(KEY) or {})
    profiles[name] = settings
    config.save({KEY: profiles})
