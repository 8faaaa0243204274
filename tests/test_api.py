"""The façade's own work: run options from keywords, and the request's defaults for a run."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest

from smmpi import api
from smmpi.errors import BadInput
from smmpi.sdk.settings import BUCKET_PLACEHOLDER

pytestmark = pytest.mark.usefixtures("no_aws_settings")


def test_progress_goes_to_the_callback_else_err(monkeypatch: pytest.MonkeyPatch) -> None:
    lines: list[str] = []
    api.options(progress=lines.append).progress("smmpi: a")
    err = io.StringIO()
    api.options(err=err).progress("smmpi: b")
    assert lines == ["smmpi: a"] and err.getvalue() == "smmpi: b\n"


def test_the_ranks_get_only_the_variables_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SMMPI_TEST_PASSED", "yes")
    monkeypatch.setenv("SMMPI_TEST_KEPT_BACK", "no")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing-AKID")
    chosen = api.options(pass_env=["SMMPI_TEST_PASSED"])
    assert dict(chosen.env) == {"SMMPI_TEST_PASSED": "yes"}
    with pytest.raises(BadInput, match="--with-credentials"):
        api.options(pass_env=["AWS_ACCESS_KEY_ID"])


def test_a_bad_log_dir_or_setting_is_refused_before_anything_runs(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    taken = tmp_path / "a-file"
    taken.write_text("")
    with pytest.raises(BadInput, match="log_dir"):
        api.options(log_dir=taken)
    monkeypatch.setenv("SMMPI_ISOLATION", "containers")
    with pytest.raises(BadInput, match="SMMPI_ISOLATION"):
        api.options()


def test_the_requests_defaults_are_submit_locals(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    region, code = api.request_defaults("smmpi-demo-1")
    assert region == "us-east-1"  # nothing set: what a dry run shows
    pattern = rf"s3://{re.escape(BUCKET_PLACEHOLDER)}/smmpi-demo-1/source/\w+/sourcedir\.tar\.gz"
    assert re.fullmatch(pattern, code), code
    config = tmp_path / "set.json"
    config.write_text(json.dumps({"bucket": "my-bucket", "region": "eu-west-1"}))
    monkeypatch.setenv("SMMPI_CONFIG", str(config))
    region, code = api.request_defaults("smmpi-demo-1")
    assert region == "eu-west-1" and code.startswith("s3://my-bucket/smmpi-demo-1/source/")
    config.write_text(json.dumps({"bucket": "Not_A_Bucket"}))
    with pytest.raises(BadInput, match=r"^invalid bucket \(from SMMPI_BUCKET or "):
        api.request_defaults("smmpi-demo-1")
