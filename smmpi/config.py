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

ENV_OF = {"role": "SMMPI_ROLE", "bucket": "SMMPI_BUCKET", "region": "SMMPI_REGION"}


def path() -> Path:
    explicit = os.environ.get("SMMPI_CONFIG")
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "smmpi" / "config.json"


def load() -> dict[str, Any]:
    """The saved settings, or {} when there is no file (a broken file is an error)."""
    p = path()
    if not p.is_file():
        return {}
    data = json.loads(p.read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        raise ValueError(f"{p}: expected a JSON object")
    return data


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
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")
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
