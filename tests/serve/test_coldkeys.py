"""A key's description file is read back with only the classes it is made of."""

from __future__ import annotations

import os
import pickle
from pathlib import Path

import pytest

from smmpi.serve.coldkeys import read_description


class _Runs:
    def __reduce__(self) -> tuple[object, tuple[str]]:
        return (os.system, ("touch ran",))


class _CallsMoto:
    def __reduce__(self) -> tuple[object, tuple[str]]:
        from moto.s3.models import get_canned_acl

        return (get_canned_acl, ("private",))


def test_a_description_that_would_call_a_function_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    for i, planted in enumerate((_Runs(), _CallsMoto())):  # a function of moto's own, too
        path = tmp_path / f"planted-{i}"
        path.write_bytes(pickle.dumps({"acl": planted}))
        assert read_description(path) is None
    assert not (tmp_path / "ran").exists()


def test_a_description_of_plain_values_and_moto_classes_is_read(tmp_path: Path) -> None:
    import datetime

    from moto.s3.models import FakeAcl

    kept = tmp_path / "kept"
    when = datetime.datetime(2026, 11, 25)
    kept.write_bytes(pickle.dumps({"acl": FakeAcl(), "last_modified": when, "tags": [1]}))
    found = read_description(kept)
    assert found is not None
    assert isinstance(found["acl"], FakeAcl) and found["last_modified"] == when


def test_a_link_is_not_read(tmp_path: Path) -> None:
    (tmp_path / "real").write_bytes(pickle.dumps({"a": 1}))
    (tmp_path / "link").symlink_to(tmp_path / "real")
    assert read_description(tmp_path / "real") == {"a": 1}
    assert read_description(tmp_path / "link") is None
