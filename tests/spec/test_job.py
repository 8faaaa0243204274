"""MPIJob: defaults, every field's check, one clear line per bad value."""

from __future__ import annotations

import dataclasses
import warnings
from pathlib import Path

import pytest

from smmpi.errors import BadInput
from smmpi.spec import (
    DEFAULT_VERSIONS,
    SMMPI_TAG_KEY,
    MPIJob,
    UnknownField,
)

ROLE = "arn:aws:iam::123456789012:role/x"


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for var in ("SMMPI_ROLE", "SMMPI_BUCKET", "SMMPI_REGION"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("SMMPI_CONFIG", str(tmp_path / "none.json"))


def test_defaults() -> None:
    job = MPIJob("demo", instances=3, ppn=2)
    assert job.framework == "tensorflow"
    assert (job.framework_version, job.py_version) == DEFAULT_VERSIONS["tensorflow"]
    assert job.instance_type == "ml.c5.2xlarge"
    assert job.world_size == 6
    assert job.distribution == {
        "mpi": {"enabled": True, "processes_per_host": 2, "custom_mpi_options": ""}
    }
    assert job.program.script == "demo.py"
    assert job.notes == ()


def test_pytorch_defaults_and_version_alias() -> None:
    job = MPIJob("demo", instances=2, ppn=2, framework="pytorch")
    assert (job.framework_version, job.py_version) == DEFAULT_VERSIONS["pytorch"]
    job = MPIJob("demo", framework="tensorflow", framework_version="2.16")
    assert (job.framework_version, job.py_version) == ("2.16", "py310")


def test_frozen() -> None:
    job = MPIJob("demo")
    with pytest.raises(dataclasses.FrozenInstanceError):
        job.ppn = 4  # type: ignore[misc]


def test_unknown_keyword_lists_valid_ones_and_suggests() -> None:
    with pytest.raises(UnknownField) as info:
        MPIJob("demo", process_per_host=2)  # type: ignore[call-arg]
    message = str(info.value)
    assert "process_per_host" in message and "did you mean 'ppn'" in message
    for name in ("instances", "ppn", "instance_type", "mpi_options", "keep_alive"):
        assert name in message
    assert isinstance(info.value, TypeError)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"instances": 0}, "instances"),
        ({"instances": -1}, "instances"),
        ({"instances": 1.5}, "instances"),
        ({"instances": "three"}, "instances"),
        ({"ppn": 0}, "ppn"),
        ({"ppn": True}, "ppn"),
        ({"instance_type": "c5.2xlarge"}, "instance_type"),
        ({"instance_type": "ml.c5.3xlarge"}, "instance_type"),
        ({"framework": "mxnet"}, "framework"),
        ({"framework_version": "9.9"}, "framework_version"),
        ({"py_version": "py27"}, "py_version"),
        ({"role": "my-role"}, "role"),
        ({"role": "arn:aws:iam::12:role/x"}, "role"),
        ({"bucket": "Bad_Bucket"}, "bucket"),
        ({"region": "mars"}, "region"),
        ({"job_name": "bad_name"}, "job_name"),
        ({"job_name": "x" * 64}, "job_name"),
        ({"base_job_name": "x" * 40}, "base_job_name"),
        ({"mpi_options": "-x A=1; rm -rf /"}, "mpi_options"),
        ({"mpi_options": "-x A=$(id)"}, "mpi_options"),
        ({"mpi_options": "-x 'A=1 2'"}, "mpi_options"),
        ({"mpi_options": "oops"}, "mpi_options"),
        ({"hyperparameters": ["epochs"]}, "hyperparameter"),
        ({"hyperparameters": ["=3"]}, "hyperparameter"),
        ({"hyperparameters": {"sagemaker_program": "x"}}, "hyperparameter"),
        ({"env": ["NOEQUALS"]}, "env"),
        ({"env": {"1BAD": "x"}}, "env"),
        ({"max_run": 0}, "max_run"),
        ({"max_run": 10**9}, "max_run"),
        ({"volume_size": 0}, "volume_size"),
        ({"tags": {"aws:x": "y"}}, "tags"),
        ({"output_path": "/tmp/out"}, "output_path"),
        ({"checkpoint_s3_uri": "bucket/x"}, "checkpoint_s3_uri"),
        ({"max_wait": 10}, "max_wait"),
        ({"use_spot": True, "max_run": 100, "max_wait": 50}, "max_wait"),
        ({"keep_alive": 99999}, "keep_alive"),
        ({"subnets": "subnet-0abc,subnet-0def"}, "subnets"),
        ({"security_groups": [f"sg-{i}" for i in range(6)]}, "security_groups"),
        ({"max_wait": "soon", "use_spot": True}, "max_wait"),
        ({"keep_alive": -1}, "keep_alive"),
        ({"keep_alive": 3601}, "keep_alive"),
        ({"keep_alive": True}, "keep_alive"),
        ({"use_spot": "yes"}, "use_spot"),
        ({"checkpoint_s3_uri": "s3://Bad_Bucket/x"}, "checkpoint_s3_uri"),
        ({"inputs": ["train"]}, "inputs"),
        ({"inputs": {"bad/name": "s3://bkt/x"}}, "inputs"),
        ({"inputs": {"x" * 65: "s3://bkt/x"}}, "inputs"),
        ({"inputs": {"": "s3://bkt/x"}}, "inputs"),
        ({"inputs": {"train": "bkt/x"}}, "inputs.train"),
        ({"inputs": {"train": "file:///no/such/dir"}}, "inputs.train"),
        ({"inputs": {"train": "file://relative/dir"}}, "inputs.train"),
        ({"inputs": {"code": "s3://bkt/x"}, "network_isolation": True}, "inputs"),
        ({"subnets": ["net-1"], "security_groups": ["sg-1"]}, "subnets"),
        ({"network_isolation": "yes"}, "network_isolation"),
    ],
)
def test_bad_field(kwargs: dict[str, object], field: str) -> None:
    with pytest.raises(BadInput) as info:
        MPIJob("demo", **kwargs)  # type: ignore[arg-type]
    assert info.value.field == field
    assert "\n" not in str(info.value)
    assert str(info.value).startswith(f"invalid {field}")


def test_unknown_entry_and_missing_file(tmp_path: Path) -> None:
    with pytest.raises(BadInput, match="ENTRY"):
        MPIJob("no_such_entry_point")
    with pytest.raises(BadInput, match="no such file"):
        MPIJob(str(tmp_path / "missing.py"))


def test_entry_name_the_container_refuses(tmp_path: Path) -> None:
    bad = tmp_path / "my script.py"
    bad.write_text("print(1)\n")
    with pytest.raises(BadInput, match="container refuses"):
        MPIJob(str(bad))


def test_ppn_above_vcpus_is_a_warning() -> None:
    with pytest.warns(UserWarning, match="exceeds the 8 vCPUs"):
        job = MPIJob("demo", instances=1, ppn=9)
    assert job.notes and "ml.c5.2xlarge" in job.notes[0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        MPIJob("demo", instances=1, ppn=8)


def test_python_api_methods_exist() -> None:
    job = MPIJob("demo", instances=3, ppn=2, role=ROLE)
    assert callable(job.plan) and callable(job.estimator) and callable(job.submit)
    assert callable(job.run_local)  # runs a job: exercised in tests/test_local_mode.py
    assert SMMPI_TAG_KEY == "smmpi:managed"


def test_help_and_spec_do_not_import_the_sdk() -> None:
    """`smmpi --help`, `smmpi submit --help` and building an MPIJob stay SDK-free."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from click.testing import CliRunner\n"
        "from smmpi.cli import main\n"
        "assert CliRunner().invoke(main, ['--help']).exit_code == 0\n"
        "assert CliRunner().invoke(main, ['submit', '--help']).exit_code == 0\n"
        "from smmpi.spec import MPIJob\n"
        "MPIJob('demo', instances=3, ppn=2)\n"
        "heavy = [m for m in ('sagemaker', 'boto3') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_spot_and_warm_pool_fields() -> None:
    """CLI strings become integers; max_wait defaults to max_run; 0..3600 keep-alive."""
    job = MPIJob("demo", use_spot=True, max_run=600, max_wait="1200")  # type: ignore[arg-type]
    assert job.max_wait == 1200
    assert MPIJob("demo", use_spot=True, max_run=600).max_wait == 600
    assert MPIJob("demo", keep_alive="3600").keep_alive == 3600  # type: ignore[arg-type]
    assert MPIJob("demo", keep_alive=0, use_spot=True).keep_alive == 0  # no warm pool: fine
    assert MPIJob("demo", checkpoint_s3_uri="s3://bkt/ck").checkpoint_s3_uri == "s3://bkt/ck"


def test_inputs_as_pairs_or_mapping(tmp_path: Path) -> None:
    a = MPIJob("demo", inputs=["train=s3://bkt/train", "val.1=s3://bkt/v"])
    assert a.input_map == {"train": "s3://bkt/train", "val.1": "s3://bkt/v"}
    b = MPIJob("demo", inputs={"train": f"file://{tmp_path}"})
    assert b.input_map == {"train": f"file://{tmp_path}"}
    assert MPIJob("demo").input_map == {}


def test_file_inputs_are_refused_for_sagemaker(tmp_path: Path) -> None:
    from smmpi.spec import require_s3_inputs

    job = MPIJob("demo", inputs={"train": f"file://{tmp_path}"})
    with pytest.raises(BadInput) as info:
        require_s3_inputs(job)
    assert info.value.field == "inputs.train"
    assert "file:// works only with --local" in str(info.value)
    require_s3_inputs(MPIJob("demo", inputs={"train": "s3://bkt/x"}))
