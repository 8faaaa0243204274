"""The SDK's own table of training images: which framework/Python versions exist.

Read from the installed SDK's ``image_uri_config`` without importing it
(importing the SDK takes seconds).
"""

from __future__ import annotations

import functools
import importlib.util
import json
from pathlib import Path
from typing import Any

from smmpi.errors import BadInput, SmmpiError

FRAMEWORKS = ("tensorflow", "pytorch")
DEFAULT_FRAMEWORK = "tensorflow"
# Current CPU training images that sagemaker 2.257 resolves (image_uri_config/*.json).
# Both DLC images install Open MPI 4 and mpi4py (their Dockerfile.cpu), so no
# requirements.txt is added to the source dir for them.
DEFAULT_VERSIONS: dict[str, tuple[str, str]] = {
    "tensorflow": ("2.19.0", "py312"),
    "pytorch": ("2.8.0", "py312"),
}


@functools.lru_cache(maxsize=1)
def _sdk_data_dir() -> Path | None:
    """The installed SDK's package dir, located without importing it (import is slow)."""
    spec = importlib.util.find_spec("sagemaker")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


@functools.lru_cache(maxsize=4)
def training_versions(framework: str) -> dict[str, Any]:
    """The SDK's own table of training images for ``framework`` (what image_uris uses)."""
    root = _sdk_data_dir()
    if root is None:
        raise SmmpiError("the SageMaker SDK is not installed: pip install 'smmpi[aws]'")
    data = json.loads((root / "image_uri_config" / f"{framework}.json").read_text())
    scope: dict[str, Any] = data["training"]
    return scope


def resolve_versions(
    framework: str, version: str | None, py_version: str | None
) -> tuple[str, str]:
    """Check a framework/python version pair against the SDK's image table."""
    default_version, default_py = DEFAULT_VERSIONS[framework]
    version = default_version if version is None else version  # "" is refused, not defaulted
    table = training_versions(framework)
    full = table.get("version_aliases", {}).get(version, version)
    entry = table["versions"].get(full)
    if entry is None:
        known = sorted(table["versions"], key=_version_key)[-6:]
        raise BadInput(
            "framework_version",
            version,
            f"a {framework} training version the SDK knows, e.g. " + ", ".join(known),
        )
    pys: list[str] = entry.get("py_versions", [])
    if py_version is None:
        py_version = default_py if default_py in pys or not pys else pys[-1]
    if pys and py_version not in pys:
        raise BadInput("py_version", py_version, f"{', '.join(pys)} (for {framework} {version})")
    return version, py_version


def check_framework(
    framework: str, version: str | None = None, py_version: str | None = None
) -> tuple[str, str, str]:
    """A framework and its image's versions, as a request would name them.

    With no version asked for, the pinned defaults (no SDK needed); otherwise the
    SDK's own image table decides (:func:`resolve_versions`).
    """
    if framework not in FRAMEWORKS:
        raise BadInput("framework", framework, " or ".join(FRAMEWORKS))
    if version is None and py_version is None:
        return (framework, *DEFAULT_VERSIONS[framework])
    return (framework, *resolve_versions(framework, version, py_version))


def _version_key(v: str) -> tuple[int, ...]:
    return tuple(int(p) if p.isdigit() else -1 for p in v.split("."))
