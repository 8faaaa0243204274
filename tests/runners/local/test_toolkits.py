"""Exact mode's toolkit: which one an image runs, where it is kept, and a named one checked."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from smmpi.errors import BadInput
from smmpi.runners.local import toolkits

PYTORCH_IMAGE = "763104351884.dkr.ecr.us-west-2.amazonaws.com/pytorch-training:2.1.0-cpu-py310"
TF_IMAGE = "763104351884.dkr.ecr.us-west-2.amazonaws.com/tensorflow-training:2.14.1-cpu-py310"


@pytest.fixture
def home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """A HOME of the test's own, and no toolkit named by the shell."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv(toolkits.VENV, raising=False)
    monkeypatch.delenv(toolkits.TF, raising=False)
    return tmp_path / "home"


def _venv(folder: Path, version: str | None = "5.1.4") -> Path:
    """A venv as ``python -m venv`` and pip leave it, with sagemaker-training unless
    ``version`` is None; returns its site-packages."""
    (folder / "bin").mkdir(parents=True)
    (folder / "bin" / "python").write_text("")
    site = folder / "lib" / "python3.11" / "site-packages"
    site.mkdir(parents=True)
    if version is not None:
        _training(site, version)
    return site


def _training(site: Path, version: str) -> None:
    (site / "sagemaker_training").mkdir(parents=True)
    (site / f"sagemaker_training-{version}.dist-info").mkdir()


def test_each_image_runs_its_frameworks_pinned_toolkit() -> None:
    assert toolkits.toolkit_of("") is toolkits.toolkit_of(PYTORCH_IMAGE)
    pytorch = toolkits.toolkit_of(PYTORCH_IMAGE)
    assert pytorch.requirements == (
        "sagemaker-training==5.1.4",
        "sagemaker-pytorch-training==3.0.0",
    )
    assert pytorch.absent == ("tensorflow",)
    assert pytorch.label == "sagemaker-training 5.1.4, sagemaker-pytorch-training 3.0.0"
    tensorflow = toolkits.toolkit_of(TF_IMAGE)
    assert tensorflow.as_is == (
        "sagemaker-training==4.8.3",
        "sagemaker-tensorflow-training==20.5.0",
    )
    assert not any(r.startswith("protobuf") for r in tensorflow.requirements)
    assert tensorflow.absent == ("torch",)
    assert tensorflow.label == "sagemaker-training 4.8.3, sagemaker-tensorflow-training 20.5.0"
    assert toolkits.variable_of(pytorch) == toolkits.VENV
    assert toolkits.variable_of(tensorflow) == toolkits.TF


def test_smmpis_own_build_is_kept_under_home_in_a_folder_named_by_its_pins(home: Path) -> None:
    py = f"py{sys.version_info[0]}.{sys.version_info[1]}"
    folders = {f: toolkits.built_folder(t) for f, t in toolkits.TOOLKITS.items()}
    for framework, folder in folders.items():
        assert folder.parent == home / ".smmpi" / "toolkits"
        version = toolkits.TOOLKITS[framework].version
        assert folder.name.startswith(f"{framework}-sagemaker-training-{version}-{py}-")
    assert folders["pytorch"] != folders["tensorflow"]
    assert toolkits.sources(PYTORCH_IMAGE) == (folders["pytorch"] / "site",)
    assert toolkits.sources(TF_IMAGE) == (folders["tensorflow"] / "site",)


def test_a_toolkit_not_built_yet_says_so_until_its_build_is_complete(home: Path) -> None:
    ready, what, fix = toolkits.status("pytorch")
    assert not ready
    assert "not built yet" in what and "once" in what
    assert toolkits.VENV in fix
    final = toolkits.built_folder(toolkits.TOOLKITS["pytorch"])
    final.mkdir(parents=True)
    assert not toolkits.status("pytorch")[0]  # a folder without its record is no build
    (final / "toolkit.json").write_text(json.dumps({}))
    ready, what, _ = toolkits.status("pytorch")
    assert ready and str(final) in what


@pytest.mark.parametrize("value", ["none", " None ", "NONE"])
def test_the_toolkit_is_off_whatever_the_case_of_none(
    home: Path, monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv(toolkits.VENV, value)
    assert toolkits.off()
    assert toolkits.sources(TF_IMAGE) is None
    assert toolkits.missing_framework("tensorflow") is None
    ready, what, fix = toolkits.status("tensorflow")
    assert ready and "sshd" in what and fix == ""


def test_a_named_venv_is_used_and_its_version_read(
    home: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    site = _venv(tmp_path / "venv")
    monkeypatch.setenv(toolkits.VENV, str(tmp_path / "venv"))
    assert toolkits.sources(PYTORCH_IMAGE) == (site,)
    assert toolkits.version_in((site,)) == "5.1.4"
    ready, what, _ = toolkits.status("pytorch")
    assert ready and what == f"sagemaker-training 5.1.4 from {toolkits.VENV}"
    assert not (home / ".smmpi").exists()  # nothing built or looked up under HOME


@pytest.mark.parametrize("has_python", [True, False])
def test_a_named_venv_without_python_or_sagemaker_training_is_refused_naming_it(
    home: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, has_python: bool
) -> None:
    venv = tmp_path / "venv"
    site = _venv(venv, version=None)
    if not has_python:
        _training(site, "5.1.4")
        (venv / "bin" / "python").unlink()
    monkeypatch.setenv(toolkits.VENV, str(venv))
    with pytest.raises(BadInput) as err:
        toolkits.sources(PYTORCH_IMAGE)
    assert (err.value.field, err.value.value) == (toolkits.VENV, str(venv))
    ready, what, fix = toolkits.status("pytorch")
    assert not ready and toolkits.VENV in what and toolkits.VENV in fix


def test_tensorflows_folders_are_layered_over_the_named_venv_first_first(
    home: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """As ``make .toolkit-tf/.installed`` builds them: ``pip --target`` folders, then the venv."""
    venv_site = _venv(tmp_path / "venv", "5.1.4")
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    _training(second, "4.8.3")
    monkeypatch.setenv(toolkits.TF, f"{first}:{second}")
    monkeypatch.setenv(toolkits.VENV, str(tmp_path / "venv"))
    sites = toolkits.sources(TF_IMAGE)
    assert sites == (first, second, venv_site)
    assert toolkits.version_in(sites) == "4.8.3"
    assert toolkits.sources(PYTORCH_IMAGE) == (venv_site,)  # PyTorch images: the venv alone
    monkeypatch.setenv(toolkits.TF, str(first))
    with pytest.raises(BadInput, match="pip --target folders") as err:
        toolkits.sources(TF_IMAGE)
    assert err.value.field == toolkits.TF


def test_tensorflow_missing_from_smmpis_environment_is_named_with_its_fix(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The TensorFlow images' toolkit imports TensorFlow as it starts; PyTorch's imports none."""
    monkeypatch.setattr(sys, "path", [p for p in sys.path if "-packages" not in p])
    monkeypatch.delitem(sys.modules, "tensorflow", raising=False)
    missing = toolkits.missing_framework("tensorflow")
    assert missing is not None
    what, fix = missing
    assert "No module named 'tensorflow'" in what and sys.executable in what
    assert fix.startswith("pip install tensorflow")
    assert toolkits.missing_framework("pytorch") is None
    ready, what, _ = toolkits.status("tensorflow")
    assert not ready and what.endswith(f"needs {missing[0]}")
