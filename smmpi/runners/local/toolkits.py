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
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from smmpi.errors import BadInput, SmmpiError
from smmpi.runners.base import Progress
from smmpi.runners.local.pip_lines import pip_reason
from smmpi.toolkit.images import framework_of

#: The PyTorch images' toolkit (and that of a request without an image): a venv, or ``none``.
VENV = "SMMPI_TOOLKIT_VENV"
#: The TensorFlow images' toolkit: folders (venvs or ``pip --target`` folders), first first.
TF = "SMMPI_TOOLKIT_TF"
NONE = "none"
#: How long the one pip install may take, at most.
BUILD_SECONDS = 600.0


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


def _variable(toolkit: Toolkit) -> str:
    return TF if toolkit.framework == "tensorflow" else VENV


def status(framework: str) -> tuple[bool, str, str]:
    """Whether ``--exact`` has the toolkit of ``framework``'s images: (ready, what, fix)."""
    if off():
        return True, f"{VENV}=none: sshd and the container's mpirun line, no toolkit", ""
    toolkit = TOOLKITS[framework]
    variable = _variable(toolkit)
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


def _clean_stale(root: Path) -> None:
    """Folders a build left when it was killed (its process is gone)."""
    for partial in root.glob(".building-*"):
        pid = partial.name.split("-")[1]
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            shutil.rmtree(partial, ignore_errors=True)


def _pip(target: Path, wanted: tuple[str, ...], no_deps: bool, deadline: float) -> None:
    argv = [sys.executable, "-m", "pip", "install", "--quiet", "--no-input"]
    argv += ["--disable-pip-version-check", "--timeout", "30", "--retries", "1"]
    argv += ["--target", str(target), *(["--no-deps"] * no_deps), *wanted]
    left = max(1.0, deadline - _now())
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=left, check=False)
    except subprocess.TimeoutExpired:
        raise SmmpiError(f"pip took more than {BUILD_SECONDS:.0f} s") from None
    if done.returncode != 0:
        raise SmmpiError(pip_reason(done.stderr))


def _now() -> float:
    return time.monotonic()


def _build(toolkit: Toolkit, final: Path) -> None:
    root = final.parent
    partial = Path(tempfile.mkdtemp(prefix=f".building-{os.getpid()}-", dir=root))
    try:
        deadline = _now() + BUILD_SECONDS
        _pip(partial / "site", toolkit.requirements, False, deadline)
        if toolkit.as_is:
            _pip(partial / "site", toolkit.as_is, True, deadline)
        marker = {"requirements": toolkit.requirements, "as_is": toolkit.as_is}
        (partial / "toolkit.json").write_text(json.dumps(marker, indent=1) + "\n")
        os.chmod(partial, 0o700)
        try:
            partial.rename(final)
        except OSError:  # another run built it meanwhile: theirs is as good
            if not (final / "toolkit.json").is_file():
                raise
    finally:
        shutil.rmtree(partial, ignore_errors=True)


def ensure(image: str, progress: Progress) -> None:
    """Build smmpi's environment of the toolkit ``image`` runs, unless it is there or named.

    One progress line, one pip install bounded by :data:`BUILD_SECONDS`; a failure (no
    network, say) is one line (SmmpiError, exit 1) and leaves no folder behind.
    """
    if sources(image) is None:
        return
    toolkit = toolkit_of(image)
    variable = _variable(toolkit)
    final = built_folder(toolkit)
    if os.environ.get(variable) or (final / "toolkit.json").is_file():
        return
    root = final.parent
    root.mkdir(mode=0o700, parents=True, exist_ok=True)
    for folder in (root.parent, root):
        os.chmod(folder, 0o700)
    _clean_stale(root)
    progress(
        f"smmpi: exact mode: building the {toolkit.framework} images' toolkit ({toolkit.label}) "
        f"in {final}, once: pip install, at most {BUILD_SECONDS:.0f} s"
    )
    try:
        _build(toolkit, final)
    except (SmmpiError, OSError) as err:
        raise SmmpiError(
            f"exact mode: building the toolkit's environment failed: {err} (nothing was kept; "
            f"{variable} may name one already built, or SMMPI_TOOLKIT_VENV=none runs sshd only)"
        ) from None
