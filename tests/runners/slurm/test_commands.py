"""SLURM's commands run from the profile's folder with its SLURM_CONF, never with this shell's
AWS credentials; a missing or failing command is one line naming it."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from smmpi.runners.slurm.commands import SlurmError, checked, offers_pmix, run
from smmpi.runners.slurm.profile import Profile

#: Stands for a SLURM command: says what it was given (its words, stdin, cwd, environment).
SAYS = """import json, os, sys
print(json.dumps({"argv": sys.argv[1:], "stdin": sys.stdin.read(), "cwd": os.getcwd(),
                  "conf": os.environ.get("SLURM_CONF"),
                  "aws": sorted(k for k in os.environ if k.startswith("AWS_"))}))
"""


@pytest.fixture
def bin_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "bin"
    folder.mkdir()
    for name, body in {
        "sbatch": SAYS,
        "scancel": "import sys; sys.exit('scancel: error: Invalid job id 9')",
        "srun": "print('MPI plugin types are...\\n\\tpmix\\n\\tnone')",
    }.items():
        path = folder / name
        path.write_text(f"#!{sys.executable}\n{body}\n")
        path.chmod(0o755)
    return folder


def test_a_command_gets_the_profiles_conf_and_no_credentials(
    bin_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing-secret")
    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    profile = Profile(bin=str(bin_dir), conf="/cluster/slurm.conf")
    said = json.loads(
        checked(
            profile, ["sbatch", "--parsable", "job.sbatch"], cwd=str(tmp_path), stdin="#!/bin/sh\n"
        )
    )
    assert said == {
        "argv": ["--parsable", "job.sbatch"],
        "stdin": "#!/bin/sh\n",
        "cwd": str(tmp_path),
        "conf": "/cluster/slurm.conf",
        "aws": said["aws"],
    }
    assert "AWS_REGION" in said["aws"]  # a region is no credential
    assert "AWS_SECRET_ACCESS_KEY" not in said["aws"]


def test_a_refusal_and_a_missing_command_are_one_line(bin_dir: Path) -> None:
    profile = Profile(name="lab", bin=str(bin_dir))
    assert run(profile, ["scancel", "9"]).code == 1
    with pytest.raises(SlurmError) as refused:
        checked(profile, ["scancel", "9"])
    assert str(refused.value) == "`scancel` failed: scancel: error: Invalid job id 9"
    with pytest.raises(SlurmError) as missing:
        run(profile, ["squeue"])
    assert str(missing.value) == f"SLURM's `squeue` is not in {bin_dir} (profile lab)"
    assert offers_pmix(profile)
    assert not offers_pmix(Profile(bin=str(bin_dir / "empty")))
