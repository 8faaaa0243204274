"""smmpi's user configuration file: role, bucket, region and the infra stack's outputs.

Precedence for each setting (highest first): command-line flag, environment
variable (``SMMPI_ROLE``, ``SMMPI_BUCKET``, ``SMMPI_REGION``), this file, then
AWS's own defaults (profile, ``AWS_REGION``/``AWS_DEFAULT_REGION``). The file is
``$SMMPI_CONFIG`` if set, else ``$XDG_CONFIG_HOME/smmpi/config.json``
(``~/.config/smmpi/config.json``). It never holds credentials.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from smmpi.bounded import CONFIG_MAX_BYTES, FileRefused, create, read_regular
from smmpi.errors import BadInput, SmmpiError

ENV_OF = {"role": "SMMPI_ROLE", "bucket": "SMMPI_BUCKET", "region": "SMMPI_REGION"}
#: The keys smmpi reads, and the type each must have (others are kept but ignored).
STRING_KEYS = ("role", "bucket", "region", "stack")
LIST_KEYS = ("security_group_ids", "subnets")
_SHAPE = 'a JSON object like the one `smmpi infra deploy` writes ({"role": "arn:...", ...})'


class ConfigError(SmmpiError):
    """The config file cannot be used (exit code 2: found before anything was touched)."""

    exit_code = 2

    def __init__(self, where: Path, problem: str) -> None:
        super().__init__(f"invalid config file {where}: {problem}; allowed: {_SHAPE}")


def path() -> Path:
    explicit = os.environ.get("SMMPI_CONFIG")
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "smmpi" / "config.json"


def load() -> dict[str, Any]:
    """The saved settings, or {} when there is no file (a broken file is :class:`ConfigError`).

    A link that leads nowhere (or in a loop), a FIFO, a device or a file over
    :data:`~smmpi.bounded.CONFIG_MAX_BYTES` is broken too, never silently skipped.
    """
    p = path()
    if not os.path.lexists(p):
        return {}
    try:
        raw = read_regular(p, "config file", CONFIG_MAX_BYTES)
    except FileRefused as err:
        raise ConfigError(p, err.problem) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ConfigError(p, f"not UTF-8 text (byte {err.start})") from None
    try:
        data = json.loads(text)
    except RecursionError:
        raise ConfigError(p, "JSON nested too deeply") from None
    except ValueError as err:
        line = getattr(err, "lineno", "?")
        raise ConfigError(p, f"not valid JSON (line {line})") from None
    if not isinstance(data, dict):
        raise ConfigError(p, f"a JSON {type(data).__name__}, not an object")
    _check_types(p, data)
    return data


def _check_types(p: Path, data: dict[str, Any]) -> None:
    for key in STRING_KEYS:
        if key in data and not isinstance(data[key], str):
            raise ConfigError(p, f"{key!r} is {data[key]!r}, not a string")
        if key in data and not data[key].strip():
            raise ConfigError(p, f"{key!r} is {data[key]!r}, an empty string (remove the key)")
    for key in LIST_KEYS:
        value = data.get(key)
        if value is not None and not (
            isinstance(value, list) and all(isinstance(v, str) for v in value)
        ):
            raise ConfigError(p, f"{key!r} is {value!r}, not a list of strings")


def ensure_home() -> None:
    """Give ``HOME`` the user's home from the password database when it is unset.

    Open MPI refuses to start without it ("Unable to get the user home
    directory"); a user with no home at all is told so in one line.
    """
    if os.environ.get("HOME"):
        return
    import pwd

    try:
        home = pwd.getpwuid(os.getuid()).pw_dir
    except KeyError:
        home = ""
    if not home:
        raise BadInput("HOME", "(unset)", "a home folder: set HOME (Open MPI needs one)")
    os.environ["HOME"] = home


def save(updates: dict[str, Any]) -> Path:
    """Merge ``updates`` into the file (None removes a key) and return its path."""
    p = path()
    data = load()
    for key, value in updates.items():
        if value is None:
            data.pop(key, None)
        else:
            data[key] = value
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_suffix(".tmp")
    with create(tmp, "config file") as f:  # never through a link planted at the temporary name
        f.write((json.dumps(data, indent=2, sort_keys=True) + "\n").encode("utf-8"))
    tmp.replace(p)
    return p


def setting(name: str, flag: str | None = None) -> str | None:
    """Resolve one setting by the documented precedence: flag, env, file."""
    if flag:
        return flag
    env = ENV_OF.get(name)
    if env and os.environ.get(env):
        return os.environ[env]
    value = load().get(name)
    return str(value) if value else None
