"""Shared fixtures: a real moto server over HTTP, a clean environment, the network guard."""

from __future__ import annotations

import importlib.util
import os
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from xdist.remote import Producer
from xdist.scheduler import LoadScopeScheduling
from xdist.scheduler.protocol import Scheduling

from tests import warm_sdk
from tests.check_tier import CHECK_TIER, REST_TIER, in_check_tier, refuse_mpirun_and_servers
from tests.helpers import BIN, NETGUARD, MotoServer, base_env, free_port
from tests.instances.hosts.footprint import track_own_processes, tracked, untrack_own_processes
from tests.nobody import end_run_folder, start_run_folder

# Under pytest-xdist each worker gets a temp folder of its own, so the checks that nothing is
# left there (run folders, sessions) see only their own worker's runs
_WORKER = os.environ.get("PYTEST_XDIST_WORKER")
_OWN_TMP = Path(tempfile.gettempdir()) / f"smmpi-tests-{os.getpid()}-{_WORKER}"
if _WORKER:
    os.environ.setdefault("SMMPI_TESTS_SHARED_TMP", tempfile.gettempdir())  # for other users
    _OWN_TMP.mkdir(mode=0o700)
    os.environ["TMPDIR"] = str(_OWN_TMP)
    tempfile.tempdir = None

#: `make check`'s tier (SMMPI_TEST_TIER=check, `tests/check_tier.py`): the modules whose tests
#: start no mpirun and no server (unit, golden, request building); a guard holds them to it.
if CHECK_TIER:
    refuse_mpirun_and_servers()

# Every process this session starts is born in its cgroup: the namespaces its tests' runs leave
# are told from those of the tests beside it (tests/instances/hosts/footprint.py)
if not CHECK_TIER:
    track_own_processes(f"smmpi-tests-{os.getpid()}")

# User 65534's venvs (tests/nobody.py) are built once a run, in a folder its workers share
if not CHECK_TIER and not _WORKER:
    start_run_folder()

# One SageMaker SDK kept imported for the run's commands (tests/warm_sdk.py)
if not _WORKER:
    warm_sdk.start()


def pytest_sessionfinish() -> None:
    if stubs := os.environ.get("SMMPI_CHECK_TIER_STUBS"):
        shutil.rmtree(stubs, ignore_errors=True)
    if _WORKER:
        shutil.rmtree(_OWN_TMP, ignore_errors=True)
    else:
        warm_sdk.end()  # (before the cgroup goes: the keeper was born in it)
    untrack_own_processes()
    if not _WORKER:
        end_run_folder()


# A suite started in the background of a non-interactive shell (`make test &`) inherits SIGINT
# ignored, and so would every smmpi it starts: the Ctrl-C tests send SIGINT as a terminal does.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


#: Folders and modules whose tests may run beside others (`make test` runs them in several
#: workers): most of their time is waiting (the toolkit's 30 s sleeps, the ModelTrainer driver's
#: retries, jobs that serve runs while a client polls them, runs that end at a timeout) or
#: building requests, and none checks the whole machine's state (``machine`` marks the few that
#: do) or times itself
SIDE_BY_SIDE = (
    "exact",
    "model_trainer",
    "serve",
    "oracle",
    "spec",
    "ops",
    "cli",
    "sdk",
    "aws",
    "toolkit",
    "platform",
    "runners/local",
    "supervision",
    "instances",
    "runners/sagemaker",
    # real programs nobody here wrote, checked against plain mpirun by their output, not time
    "compat/test_mpi4py_suite.py",
    "compat/test_mpi4py_demos.py",
    "compat/test_mpipool.py",
    # the packaged entry points' runs, the docs' blocks (each in a folder of its own, servers
    # on free ports), the notebook against a server of its own, doctor's checks
    "entry_points",
    "test_readme.py",
    "test_notebook.py",
    "test_doctor.py",
    # no cluster, no timing: the SLURM runner's script, profile, signs and verdict, the runner
    # registry, the one table of causes, the keepers' sockets (tests/slurm's cluster tests stay
    # one at a time)
    "runners/slurm",
    "runners/test_registry.py",
    "slurm/test_verdict.py",
    "test_causes.py",
    "test_keepers.py",
)

#: Folders that check what their runs leave (namespaces, processes, mounts, run folders): they
#: may run beside others only when this session's processes are told from other sessions'
#: (a cgroup of its own, see footprint.py); elsewhere they run one at a time, even where a
#: folder above them is listed in SIDE_BY_SIDE
SIDE_BY_SIDE_TRACKED = ("faults", "instances/hosts")


def pytest_ignore_collect(collection_path: Path) -> bool | None:
    """Under `make check`, only its tier's modules are collected; after it, only the others."""
    if collection_path.suffix == ".py" and collection_path.name.startswith("test_"):
        if CHECK_TIER:
            return not in_check_tier(collection_path)
        if REST_TIER and in_check_tier(collection_path):
            return True
    return None


#: Modules whose tests share a costly module or session fixture and are quick after it: under
#: pytest-xdist's ``--dist loadgroup`` (`make test`) each group runs in one worker, so its fixture
#: is made once instead of once in every worker that gets one of its tests
SHARED_FIXTURE = {
    # the real toolkit's answers for the whole matrix (tests/oracle/conftest.py)
    **dict.fromkeys(
        (
            "oracle/test_environment.py",
            "oracle/test_etc_environment.py",
            "oracle/test_mpirun.py",
            "oracle/test_package.py",
            "oracle/test_tags.py",
            "oracle/test_toolkit_facts.py",
        ),
        "oracle-differential",
    ),
    "faults/test_boundary.py": "boundary-probe",  # one probe job, checked 7 ways
    # the machine's one process-accounting file: its two tests one after the other
    "test_cpu_by_command.py": "process-accounting",
    # plain mpirun's runs of mpi4py's suite and of each demo, made once for both modes: the
    # suite in one worker, the demos in another (each run of one of them at a time)
    "compat/test_mpi4py_suite.py": "mpi4py-suite",
    **dict.fromkeys(("compat/test_mpi4py_demos.py", "compat/test_mpipool.py"), "mpi4py-demos"),
}


class _SharedFixtureGroups(LoadScopeScheduling):
    """pytest-xdist's ``loadgroup`` with ``SHARED_FIXTURE``'s groups: each group is one unit of
    work, every other test one of its own; the largest units go first."""

    def _split_scope(self, nodeid: str) -> str:
        module = nodeid.split("::", 1)[0].removeprefix("tests/")
        return SHARED_FIXTURE.get(module, nodeid)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Producer) -> Scheduling | None:
    """``--dist loadgroup`` (`make test`) groups by module here: pytest-xdist 3.8's own reads
    ``xdist_group`` marks through node ids that pytest 9.2 no longer lets it rewrite, so it
    silently groups nothing."""
    if config.getvalue("dist") != "loadgroup":
        return None
    return _SharedFixtureGroups(config, log)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    tests = Path(__file__).parent
    for item in items:
        path = item.path.relative_to(tests)
        folder = path.parent.as_posix()
        if _under(folder, SIDE_BY_SIDE_TRACKED):
            beside = tracked()
        else:
            beside = _under(folder, SIDE_BY_SIDE) or path.as_posix() in SIDE_BY_SIDE
        if beside:
            item.add_marker(pytest.mark.side_by_side)


def _under(folder: str, folders: tuple[str, ...]) -> bool:
    return any(folder == f or folder.startswith(f + "/") for f in folders)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto``: four workers where this session's processes are told from the others' (a
    cgroup of its own), else one."""
    return 4 if tracked() else 1


def _run_dirs() -> set[Path]:
    return set(Path(tempfile.gettempdir()).glob("smmpi-run-*"))


@pytest.fixture(autouse=True)
def no_run_dir_left() -> Iterator[None]:
    """After every test, no run folder (``$TMPDIR/smmpi-run-*``) that the test's runs made is
    left. A reaper may still be removing one for a run that smmpi did not outlive: wait 10 s."""
    before = _run_dirs()
    yield
    deadline = time.monotonic() + 10
    while (left := _run_dirs() - before) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not left, f"run folders left behind: {sorted(map(str, left))}"


@pytest.fixture(autouse=True)
def guard(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[dict[str, str]]:
    """Every AWS test (marked ``aws``, or using the moto server) runs under the network guard,
    in process and in the subprocesses it starts with ``env``: any use of a host but loopback
    fails the test. Other tests get ``{}``.
    """
    aws_test = request.node.get_closest_marker("aws") is not None
    if not aws_test and "moto_server" not in request.fixturenames:
        yield {}
        return
    log = tmp_path / "netguard.log"
    log.write_text("")
    spec = importlib.util.spec_from_file_location(
        "smmpi_test_netguard", NETGUARD / "sitecustomize.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    undo = module.install(str(log))
    try:
        yield {"PYTHONPATH": str(NETGUARD), "SMMPI_NETGUARD_LOG": str(log)}
    finally:
        undo()
    hits = log.read_text().strip()
    assert not hits, f"connections outside the moto server:\n{hits}"


@pytest.fixture
def env(tmp_path: Path, guard: dict[str, str]) -> dict[str, str]:
    """A clean environment for the CLI (guarded in AWS tests)."""
    return {**base_env(tmp_path), **guard}


@pytest.fixture
def run_env(env: dict[str, str], tmp_path: Path) -> dict[str, str]:
    """The clean env with TMPDIR private to the test, so created run dirs can be counted."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env["TMPDIR"] = str(tmp)
    return env


@pytest.fixture(scope="session")
def moto_server_session() -> Iterator[MotoServer]:
    port = free_port()
    proc = subprocess.Popen(
        [str(BIN / "moto_server"), "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        try:
            urllib.request.urlopen(f"{url}/moto-api/", timeout=1).read()
            break
        except OSError:
            if time.monotonic() > deadline or proc.poll() is not None:
                proc.kill()
                raise RuntimeError("moto server did not start") from None
            time.sleep(0.2)
    try:
        yield MotoServer(url)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


@pytest.fixture
def moto_server(moto_server_session: MotoServer) -> Iterator[MotoServer]:
    """The session's moto server, emptied before each test."""
    moto_server_session.reset()
    yield moto_server_session


@pytest.fixture
def aws(moto_server: MotoServer, env: dict[str, str]) -> dict[str, str]:
    """CLI environment pointing at moto with fake credentials; IMDS not disabled (the guard is)."""
    out = {**env, **moto_server.aws_env()}
    out.pop("AWS_EC2_METADATA_DISABLED", None)
    return out


@pytest.fixture
def no_aws_settings(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No credentials, no SMMPI_* settings: planning must not need them."""
    for var in list(os.environ):
        if var.startswith(("AWS_", "SMMPI_")):
            monkeypatch.delenv(var)
    monkeypatch.setenv("SMMPI_CONFIG", str(tmp_path / "none.json"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-aws-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
