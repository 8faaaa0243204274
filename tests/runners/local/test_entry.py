"""A whole request's entry point (``run --from-job``, serve), checked as the container takes it."""

from __future__ import annotations

from pathlib import Path

import pytest

from smmpi.archives import pack
from smmpi.errors import BadInput
from smmpi.runners.local.entry import FIELD, check_request_entry


def _code(tmp_path: Path, *names: str) -> bytes:
    """The code archive a request carries, packed as smmpi packs a source dir."""
    files = []
    for name in names:
        path = tmp_path / "src" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("print('hello')\n")
        files.append((path, name))
    return pack(files)


@pytest.mark.parametrize("script", ["train.py", "sub/train.py", "_x.py", "v1.2+local.py"])
def test_a_python_file_the_container_accepts_passes_whatever_the_code(
    tmp_path: Path, script: str
) -> None:
    check_request_entry(script, _code(tmp_path, "other.py"))
    check_request_entry(script, b"not an archive")  # the .py name alone decides


def test_a_name_without_py_and_no_setup_py_is_refused_with_exit_code_2(tmp_path: Path) -> None:
    with pytest.raises(BadInput) as err:
        check_request_entry("train", _code(tmp_path, "train", "helper.py"))
    assert err.value.exit_code == 2
    assert err.value.field == FIELD == "HyperParameters.sagemaker_program"
    assert err.value.value == "train"
    assert "setup.py" in err.value.allowed and "--exact" in err.value.allowed


@pytest.mark.parametrize("setup", ["setup.py", "./setup.py"])
def test_any_name_passes_when_the_code_has_a_setup_py_at_its_top(
    tmp_path: Path, setup: str
) -> None:
    check_request_entry("train", _code(tmp_path, "train", setup))


def test_a_setup_py_in_a_subfolder_does_not_make_the_code_a_package(tmp_path: Path) -> None:
    with pytest.raises(BadInput, match="a Python file"):
        check_request_entry("train", _code(tmp_path, "train", "pkg/setup.py"))


@pytest.mark.parametrize("setup", [".setup.py", "..setup.py"])
def test_a_hidden_file_ending_in_setup_py_does_not_make_the_code_a_package(
    tmp_path: Path, setup: str
) -> None:
    """Only a file named setup.py at the code's top is installed as a package."""
    with pytest.raises(BadInput, match="a Python file"):
        check_request_entry("train", _code(tmp_path, "train", setup))


def test_a_code_that_is_no_archive_refuses_a_non_python_name_as_bad_input() -> None:
    """Its broken archive is the extract step's to report; here only the name is refused."""
    with pytest.raises(BadInput, match="a Python file"):
        check_request_entry("train", b"\x1f\x8b not really gzip")


@pytest.mark.parametrize(
    "script", ["../train.py", "a/./train.py", "a/../train.py", "-x.py", "x y.py"]
)
def test_a_name_the_containers_toolkit_refuses_is_refused_before_the_code_is_read(
    tmp_path: Path, script: str
) -> None:
    with pytest.raises(BadInput, match="SageMaker container refuses") as err:
        check_request_entry(script, _code(tmp_path, "setup.py"))
    assert err.value.value == script
