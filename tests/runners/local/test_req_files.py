"""A code's requirements files, read from its archive and checked before the job exists."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from smmpi.bounded import FileRefused
from smmpi.errors import BadInput
from smmpi.runners.local.req_files import (
    MAX_BYTES,
    logical_lines,
    nested,
    requirement_lines,
    shown,
)
from tests.helpers import tar_gz


def test_the_lines_are_pips_logical_lines_comments_and_continuations_handled() -> None:
    text = (
        "\ufeff# the project's pins\n"
        "numpy==1.26.4  # for the ranks\n"
        "\n"
        "torch \\\n"
        "  >=2.1\n"
        "pkg @ https://example.com/pkg.zip#egg=pkg\n"
    )
    source = tar_gz({"requirements.txt": text.encode(), "train.py": b""})
    assert requirement_lines(source, install=False) == [
        "numpy==1.26.4",
        "torch   >=2.1",
        "pkg @ https://example.com/pkg.zip#egg=pkg",
    ]


def test_a_code_without_requirements_txt_at_its_top_has_none() -> None:
    assert requirement_lines(tar_gz({"sub/requirements.txt": b"numpy\n"}), True) is None


def test_each_form_of_a_nested_file_option_is_found() -> None:
    assert nested("-r a.txt") == [("-r", "a.txt")]
    assert nested("-rb.txt") == [("-r", "b.txt")]
    assert nested("--constraint=c.txt") == [("--constraint", "c.txt")]
    assert nested("--requirement 'with space.txt'") == [("--requirement", "with space.txt")]
    assert nested("numpy==1.26") == []
    assert nested("-r 'unclosed") == []  # pip refuses that line itself


def test_a_requirements_file_over_the_cap_is_refused_naming_it() -> None:
    source = tar_gz({"requirements.txt": b"#" * (MAX_BYTES + 1)})
    with pytest.raises(FileRefused, match="over the 16 MiB limit") as err:
        requirement_lines(source, install=False)
    assert err.value.value == "requirements.txt" and err.value.exit_code == 2


def test_a_binary_requirements_file_is_refused_naming_the_byte_and_its_offset() -> None:
    source = tar_gz({"requirements.txt": b"numpy\n\xff\xfe"})
    with pytest.raises(BadInput, match=r"byte 0xff at offset 6 is not UTF-8"):
        requirement_lines(source, install=False)


def test_nested_files_are_checked_only_when_the_requirements_are_installed() -> None:
    source = tar_gz({"requirements.txt": b"-r missing.txt\n"})
    assert requirement_lines(source, install=False) == ["-r missing.txt"]
    with pytest.raises(FileRefused, match="no such file in the code dir") as err:
        requirement_lines(source, install=True)
    assert err.value.field == "-r in requirements.txt"
    assert err.value.value == "missing.txt"


def test_nested_names_resolve_beside_the_file_that_names_them_and_cycles_end() -> None:
    """``-r b.txt`` in ``sub/a.txt`` is ``sub/b.txt``; ``/opt/ml/code/NAME`` is the code dir's."""
    source = tar_gz(
        {
            "requirements.txt": b"-r sub/a.txt\n-c /opt/ml/code/pins.txt\n-r https://x/y.txt\n",
            "sub/a.txt": b"-r b.txt\n",
            "sub/b.txt": b"--requirement=a.txt\n-c ../requirements.txt\n",
            "pins.txt": b"numpy<2\n",
        }
    )
    assert requirement_lines(source, install=True) == [
        "-r sub/a.txt",
        "-c /opt/ml/code/pins.txt",
        "-r https://x/y.txt",
    ]
    broken = tar_gz({"requirements.txt": b"-r sub/a.txt\n", "sub/a.txt": b"-r c.txt\n"})
    with pytest.raises(FileRefused) as err:
        requirement_lines(broken, install=True)
    assert (err.value.field, err.value.value) == ("-r in sub/a.txt", "c.txt")


def test_a_nested_name_outside_the_code_dir_is_refused() -> None:
    source = tar_gz({"requirements.txt": b"-r ../../etc/passwd\n"})
    with pytest.raises(FileRefused, match="outside the code dir"):
        requirement_lines(source, install=True)


@pytest.mark.parametrize("target", ["/etc/passwd", "../outside.txt"])
def test_a_link_out_of_the_code_dir_is_refused(target: str) -> None:
    source = tar_gz({"train.py": b""}, links={"requirements.txt": target})
    with pytest.raises(FileRefused, match="a link out of the code dir"):
        requirement_lines(source, install=False)


def test_a_link_inside_the_code_dir_is_followed() -> None:
    source = tar_gz({"deps/all.txt": b"numpy\n"}, links={"requirements.txt": "deps/all.txt"})
    assert requirement_lines(source, install=False) == ["numpy"]


def test_a_file_of_this_machine_is_read_but_a_device_or_fifo_is_refused(tmp_path: Path) -> None:
    pins = tmp_path / "pins.txt"
    pins.write_text("numpy<2\n")
    ok = tar_gz({"requirements.txt": f"-c {pins}\nnumpy\n".encode()})
    assert requirement_lines(ok, install=True) == [f"-c {pins}", "numpy"]
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for special in ("/dev/zero", str(fifo)):
        source = tar_gz({"requirements.txt": f"-r {special}\n".encode()})
        with pytest.raises(FileRefused, match="a regular file smmpi can use") as err:
            requirement_lines(source, install=True)
        assert err.value.value == special


def test_a_few_lines_are_shown_cut_short_with_how_many_more() -> None:
    assert shown([]) == "nothing"
    assert shown(["numpy", "scipy"]) == "numpy, scipy"
    many = ["a", "b", "c", "d", "e"]
    assert shown(many) == "5 requirements: a, b, c, … and 2 more"
    assert shown(["x" * 80]) == "x" * 59 + "…"


def test_a_trailing_continuation_keeps_its_line() -> None:
    assert logical_lines("numpy \\\n") == ["numpy"]
    assert logical_lines("# only a comment\n\n") == []
