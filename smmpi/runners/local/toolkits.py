"""The container's toolkit for exact mode: the image's versions, built once by smmpi and cached.

Each Deep Learning Container ships ``sagemaker-training`` and its framework's toolkit at the
versions its Dockerfile pins: the PyTorch images sagemaker-training 5.1.4 with
sagemaker-pytorch-training 3.0.0; the TensorFlow images sagemaker-tensorflow-training 20.5.0,
which pins ``sagemaker-training<=4.8.3`` (and ``numpy<1.24``). On first use smmpi pip-installs
them into a folder of its own under ``~/.smmpi/toolkits`` (0700), never into the user's
environment: built in a temporary folder, renamed into place once complete, and reused after.

The TensorFlow pair goes in without its dependencies (their pins, ``numpy<1.24`` and
sagemaker-training 4.8.3's ``protobuf<=3.20.3``, would shadow the TensorFlow the ranks import),
with sagemaker-training's other dependencies resolved beside it: the layering the project's
own toolkit environments use (``make .venv-toolkit/.installed .toolkit-tf/.installed``).

``$SMMPI_TOOLKIT_VENV`` (PyTorch images, and a request without an image) and ``$SMMPI_TOOLKIT_TF``
(TensorFlow images; folders layered over ``$SMMPI_TOOLKIT_VENV`` when both are set, as
``make .toolkit-tf/.installed`` builds them) name environments already built instead;
``SMMPI_TOOLKIT_VENV=none`` turns the toolkit off (exact mode then runs the container's
mpirun line, with sshd only).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path

from smmpi.errors import BadInput
from smmpi.toolkit.images import framework_of

#: The PyTorch images' toolkit (and that of a request without an image): a venv, or ``none``.
VENV = "SMMPI_TOOLKIT_VENV"
#: The TensorFlow images' toolkit: folders (venvs or ``pip --target`` folders), first first.
TF = "SMMPI_TOOLKIT_TF"
NONE = "none"


@dataclass(frozen=True)
class Toolkit:
    """What one framework's images pin, as pip requirements."""

    framework: str
    version: str  # sagemaker-training's
    requirements: tuple[str, ...]  # installed with their dependencies
    as_is: tuple[str, ...] = ()  # installed without theirs (--no-deps)
    #: the other framework, which the image does not ship: the toolkit's own process (not the
    #: ranks) must not find it in this environment (exact.toolkit_python)
    absent: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        return ", ".join(r.replace("==", " ") for r in (*self.as_is, *self.requirements)[:2])


#: sagemaker-training 4.8.3's own dependencies, but its protobuf pin (the ranks' TensorFlow
#: brings the protobuf it needs; the toolkit reads none at training time).
_TRAINING_4_DEPENDENCIES = (
    "numpy",
    "boto3>=1.28.57",
    "botocore>=1.31.57",
    "six",
    "pip",
    "retrying>=1.3.3",
    "gevent",
    "inotify_simple==1.2.1",
    "werkzeug>=0.15.5",
    "paramiko>=2.4.2",
    "psutil>=5.6.7",
    "scipy>=1.2.2",
)
TOOLKITS = {
    "pytorch": Toolkit(
        "pytorch",
        "5.1.4",
        ("sagemaker-training==5.1.4", "sagemaker-pytorch-training==3.0.0"),
        absent=("tensorflow",),
    ),
    "tensorflow": Toolkit(
        "tensorflow",
        "4.8.3",
        _TRAINING_4_DEPENDENCIES,
        ("sagemaker-training==4.8.3", "sagemaker-tensorflow-training==20.5.0"),
        absent=("torch",),
    ),
}


def toolkit_of(image: str) -> Toolkit:
    """The toolkit ``image`` runs (without an image: PyTorch's; ``smmpi run`` without
    ``--framework`` has the default TensorFlow image)."""
    return TOOLKITS[framework_of(image) if image else "pytorch"]


def cache_root() -> Path:
    return Path.home() / ".smmpi" / "toolkits"


def built_folder(toolkit: Toolkit) -> Path:
    """Where smmpi keeps ``toolkit`` for this Python; the name changes with the pins."""
    pins = json.dumps([toolkit.requirements, toolkit.as_is, sys.version_info[:2]])
    digest = hashlib.sha256(pins.encode()).hexdigest()[:8]
    py = f"py{sys.version_info[0]}.{sys.version_info[1]}"
    return cache_root() / f"{toolkit.framework}-sagemaker-training-{toolkit.version}-{py}-{digest}"


def _site_of(path: Path) -> Path:
    """A venv's site-packages, or the folder itself (``pip --target``)."""
    found = sorted(path.glob("lib/python3*/site-packages"))
    return found[0] if found else path


_VENV_RULE = "a venv with sagemaker-training installed, or none (sshd only)"


def _named(variable: str, value: str) -> tuple[Path, ...]:
    sites = tuple(_site_of(Path(p)) for p in value.split(os.pathsep) if p)
    if not any((s / "sagemaker_training").is_dir() for s in sites):
        allowed = _VENV_RULE
        if variable == TF:
            allowed = "folders (venvs or pip --target folders) holding sagemaker-training"
        raise BadInput(variable, value, allowed)
    return sites


def off() -> bool:
    """Exact mode without the toolkit: ``SMMPI_TOOLKIT_VENV=none``."""
    return os.environ.get(VENV, "").strip().lower() == NONE


def sources(image: str) -> tuple[Path, ...] | None:
    """The folders the toolkit for ``image`` imports from, first first; None: no toolkit.

    An environment named by ``$SMMPI_TOOLKIT_VENV``/``$SMMPI_TOOLKIT_TF`` is checked (a
    BadInput names it); otherwise smmpi's own, which must have been built (:func:`ensure`).
    """
    if off():
        return None
    return _sources_of(toolkit_of(image))


def _sources_of(toolkit: Toolkit) -> tuple[Path, ...]:
    venv = _named_venv()  # checked for every image: a TensorFlow job layers it, if at all
    if toolkit.framework != "tensorflow":
        return venv or (built_folder(toolkit) / "site",)
    named = os.environ.get(TF)
    if not named:
        return (built_folder(toolkit) / "site",)
    return _named(TF, named) + (venv or ())  # as `make .toolkit-tf` builds it: over the venv


def _named_venv() -> tuple[Path, ...] | None:
    """``$SMMPI_TOOLKIT_VENV``'s folders (None: unset): a venv, its ``bin/python`` and
    sagemaker-training, whichever image the job runs."""
    named = os.environ.get(VENV)
    if not named:
        return None
    if not (Path(named) / "bin" / "python").is_file():
        raise BadInput(VENV, named, _VENV_RULE)
    return _named(VENV, named)


def variable_of(toolkit: Toolkit) -> str:
    return TF if toolkit.framework == "tensorflow" else VENV


def status(framework: str) -> tuple[bool, str, str]:
    """Whether ``--exact`` has the toolkit of ``framework``'s images: (ready, what, fix)."""
    if off():
        return True, f"{VENV}=none: sshd and the container's mpirun line, no toolkit", ""
    toolkit = TOOLKITS[framework]
    variable = variable_of(toolkit)
    try:
        sites = _sources_of(toolkit)
    except BadInput as err:
        fix = f"name a venv holding sagemaker-training in {err.field}, or unset it"
        return False, str(err), fix
    missing = missing_framework(framework)
    if missing:
        return False, f"{toolkit.label} needs {missing[0]}", missing[1]
    if os.environ.get(variable):
        return True, f"sagemaker-training {version_in(sites)} from {variable}", ""
    final = built_folder(toolkit)
    if (final / "toolkit.json").is_file():
        return True, f"{toolkit.label}, smmpi's build in {final}", ""
    return (
        False,
        f"{toolkit.label} not built yet: the first --exact run of a {framework} image builds it "
        f"with pip, once",
        f"run it once where PyPI (or pip's index) is reachable, or name a built one in {variable}",
    )


#: The TensorFlow images' toolkit imports TensorFlow as it starts
#: (``sagemaker_tensorflow_container/training.py``: ``import tensorflow as tf``); the images
#: have it, and here it comes from smmpi's environment, which the ranks share.
FRAMEWORK_IMPORTS = {"tensorflow": ("tensorflow", "TensorFlow")}


def missing_framework(framework: str) -> tuple[str, str] | None:
    """What the toolkit of ``framework``'s images imports at start and smmpi's environment
    lacks, and how to install it; None when nothing is missing (or the toolkit is off)."""
    if off() or framework not in FRAMEWORK_IMPORTS:
        return None
    module, name = FRAMEWORK_IMPORTS[framework]
    if importlib.util.find_spec(module) is not None:
        return None
    what = (
        f"{name} in smmpi's environment ({sys.executable}), which the {framework} images' "
        f"toolkit imports as it starts (else: No module named {module!r})"
    )
    return what, f"pip install {module} there, or run a --framework pytorch job"


def version_in(sites: tuple[Path, ...]) -> str:
    """sagemaker-training's version in the first of ``sites`` that has it."""
    for site in sites:
        if (site / "sagemaker_training").is_dir():
            found = sorted(site.glob("sagemaker_training-*.dist-info"))
            return found[0].name.removesuffix(".dist-info").split("-")[1] if found else "?"
    return "?"
