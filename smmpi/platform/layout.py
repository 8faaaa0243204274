"""Each emulated instance's ``/opt/ml`` tree on this machine, laid out before a run.

The tree holds what SageMaker puts on an instance: the config files under
``input/config``, the channels under ``input/data``, the code, and empty model
and output dirs. Ranks also load smmpi's rank hook (:mod:`smmpi.supervision.rank_hook`) as
their ``sitecustomize``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from smmpi.errors import BadInput
from smmpi.ops.signals import STOPS, held
from smmpi.spec.secrets import check_pass_env
from smmpi.toolkit.container import etc_environment, rank_env
from smmpi.toolkit.environment import hyperparameters_json as hyperparameters_json_of
from smmpi.toolkit.environment import input_data_config, resource_config
from smmpi.toolkit.hosts import HostDirs
from smmpi.toolkit.shape import JobShape

#: Copied as every rank's ``sitecustomize.py`` (a file, not imported here).
RANK_HOOK = Path(__file__).parents[1] / "supervision" / "rank_hook.py"


def host_dirs(run_dir: Path, host: str) -> HostDirs:
    return HostDirs(run_dir / host / "opt" / "ml")


def stack_dir(run_dir: Path) -> Path:
    """Where ranks record their pid, stack, top-level exception and end (``rank-R.*``), and
    the run's reaper the stray processes it killed (``strays.json``)."""
    return run_dir / ".smmpi" / "stacks"


def site_dir(run_dir: Path) -> Path:
    """Where the ranks' ``sitecustomize`` is, first on their PYTHONPATH."""
    return run_dir / ".smmpi" / "site"


def write_config(
    dirs: HostDirs,
    shape: JobShape,
    host: str,
    hyperparameters_json: Mapping[str, str] | None = None,
) -> None:
    """The files SageMaker writes to ``/opt/ml/input/config`` on each instance."""
    hps = (
        hyperparameters_json if hyperparameters_json is not None else hyperparameters_json_of(shape)
    )
    for name, content in (
        ("resourceconfig.json", resource_config(shape, host)),
        ("hyperparameters.json", hps),
        ("inputdataconfig.json", input_data_config(shape)),
    ):
        (dirs.config / name).write_text(json.dumps(content, indent=2) + "\n", encoding="utf-8")


def etc_dir(run_dir: Path, host: str) -> Path:
    """The files an instance's own ``/etc`` gets (``environment``, on algo-2..N)."""
    return run_dir / host / "etc"


def prepare_hosts(
    shape: JobShape,
    run_dir: Path,
    lay_code: Callable[[HostDirs], None],
    hyperparameters_json: dict[str, str] | None = None,
) -> list[HostDirs]:
    """Create every emulated instance's /opt/ml tree and lay out its code dir, all the
    instances at once (:func:`each_host`: ``lay_code`` writes its own host's tree only).

    A worker's ``/etc/environment`` text, as its toolkit writes it, goes to
    :func:`etc_dir` (isolated hosts give each instance that file in its own /etc).
    """

    def lay_out(host: str) -> HostDirs:
        dirs = host_dirs(run_dir, host)
        dirs.create()
        write_config(dirs, shape, host, hyperparameters_json)
        text = etc_environment(shape, host)
        if text:
            etc_dir(run_dir, host).mkdir(parents=True, exist_ok=True)
            (etc_dir(run_dir, host) / "environment").write_text(text, encoding="utf-8")
        lay_code(dirs)
        return dirs

    all_dirs = each_host(shape.hosts, lay_out)
    for d in (stack_dir(run_dir), site_dir(run_dir)):
        d.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(RANK_HOOK, site_dir(run_dir) / "sitecustomize.py")
    return all_dirs


def each_host(hosts: Sequence[str], work: Callable[[str], HostDirs]) -> list[HostDirs]:
    """``work`` for every host, one thread per core, in the hosts' order. Creating files is
    the kernel's work (a file create costs 0.3 ms of CPU on some disks), so threads share it
    out. On any failure, an interrupt included, no host is begun after it, and those under
    way end before it is raised: nothing is written once the caller cleans up."""
    workers = max(1, min(len(hosts), os.cpu_count() or 1, 8))
    if workers == 1:
        return [work(host) for host in hosts]
    todo = list(enumerate(hosts))[::-1]
    done: dict[int, HostDirs] = {}
    failed: list[tuple[int, BaseException]] = []
    stop = threading.Event()
    ended = [threading.Event() for _ in range(workers)]

    def worker(end: threading.Event) -> None:
        try:
            signal.pthread_sigmask(signal.SIG_BLOCK, STOPS)  # Ctrl-C wakes the waiting thread
            while not stop.is_set():
                try:
                    index, host = todo.pop()  # (one list operation: atomic)
                except IndexError:
                    return
                try:
                    done[index] = work(host)
                except BaseException as err:
                    failed.append((index, err))
                    stop.set()
        finally:
            end.set()

    threads = [threading.Thread(target=worker, args=(e,), name="smmpi-layout") for e in ended]
    try:
        for thread in threads:
            thread.start()
        for end in ended:  # not Thread.join: on Python 3.11 a join that Ctrl-C interrupts
            end.wait()  # marks the thread ended while it runs, and the next join returns at once
    finally:
        with held():  # a second Ctrl-C or SIGTERM waits until every started thread has ended
            stop.set()  # before any is looked at: one not yet seen to start begins no host
            for thread, end in zip(threads, ended, strict=True):
                if thread.ident is not None:
                    end.wait()
    if failed:
        raise min(failed, key=lambda f: f[0])[1]  # the first host's, as one at a time
    return [done[i] for i in range(len(hosts))]


#: Open MPI's own variables (and PMIx's, OPAL's, PRRTE's), which a user may set to tune it.
MPI_PREFIXES = ("OMPI_", "OPAL_", "PMIX_", "PRTE_")
#: Those of them that smmpi sets itself, whatever the shell has: root's leave to run Open MPI
#: (the container runs as root with ``--allow-run-as-root``), so they are never "left out".
SMMPI_SETS = ("OMPI_ALLOW_RUN_AS_ROOT", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM")
#: What mpirun itself needs from this machine: the programs, a home, a scratch dir.
MACHINE = ("PATH", "HOME", "TMPDIR", "USER", "LOGNAME")


#: The images' locale (their ENV sets it, and so every rank's host file). Set for mpirun too: a
#: Python started without a locale (smmpi's watch.py, around mpirun and each rank) would
#: otherwise coerce it and export ``LC_CTYPE=C.UTF-8``, which no rank has in the container.
LOCALE = {"LC_ALL": "C.UTF-8"}


def launch_env(launcher_env: Mapping[str, str], environ: Mapping[str, str]) -> dict[str, str]:
    """mpirun's own environment, which ranks inherit: the machine's PATH, HOME and TMPDIR,
    the images' locale, what smmpi sets for Open MPI, and nothing else of this shell: not
    its AWS credentials, nor its Open MPI settings (:func:`left_out_mpi`), which a
    SageMaker container does not have (``OMPI_MCA_plm=isolated`` made mpirun start every
    rank on algo-1).
    """
    kept = {k: v for k, v in environ.items() if k in MACHINE}
    return {**LOCALE, **kept, **launcher_env}


def left_out_mpi(environ: Mapping[str, str]) -> str | None:
    """The one line naming this shell's Open MPI settings that a run leaves out, if any."""
    names = sorted(k for k in environ if k.startswith(MPI_PREFIXES) and k not in SMMPI_SETS)
    if not names:
        return None
    return (
        f"smmpi: left out this shell's Open MPI settings ({', '.join(names)}): a SageMaker "
        "container has none; pass one with --mpi-options '-mca NAME VALUE'"
    )


def rank_variables(
    shape: JobShape,
    run_dir: Path,
    host: str,
    extra_env: Mapping[str, str] | None = None,
    extra_paths: Sequence[str] = (),
) -> dict[str, str]:
    """Every variable a rank on ``host`` gets on top of mpirun's environment.

    The container's (:func:`smmpi.toolkit.container.rank_env`), with the
    variables the user passed (``extra_env``), smmpi's rank hook first on
    PYTHONPATH and ``extra_paths`` (a job's installed requirements) after the code.
    """
    dirs = host_dirs(run_dir, host)
    env = rank_env(shape, dirs, host, dict(extra_env or {}))
    env["PYTHONPATH"] = os.pathsep.join([str(site_dir(run_dir)), env["PYTHONPATH"], *extra_paths])
    env.update(SMMPI_LOCAL="1", SMMPI_STACK_DIR=str(stack_dir(run_dir)))
    return env


#: What ``--with-credentials`` passes: this shell's AWS identity and where to find it.
CREDENTIALS = (
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_PROFILE",
    "AWS_CONFIG_FILE",
    "AWS_SHARED_CREDENTIALS_FILE",
    "AWS_REGION",
    "AWS_DEFAULT_REGION",
    "AWS_ENDPOINT_URL",
)


#: Those of them that are secrets: never written to disk, and kept from the host files.
SECRETS = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN")


def passed_variables(
    names: Sequence[str], with_credentials: bool, environ: Mapping[str, str]
) -> dict[str, str]:
    """The variables of this shell the user asked to pass to the ranks (``--pass-env NAME``)."""
    out: dict[str, str] = {}
    check_pass_env(names)
    for name in names:
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            raise BadInput("pass-env", name, "a variable name (letters, digits, _)")
        if name not in environ:
            raise BadInput("pass-env", name, "a variable set in this shell")
        out[name] = environ[name]
    if with_credentials:
        out.update({k: environ[k] for k in CREDENTIALS if k in environ})
    return out


def credentials_note(passed: Mapping[str, str]) -> str | None:
    """The line a run prints when it gives the ranks this shell's AWS identity."""
    names = [k for k in passed if k.startswith("AWS_")]
    if not names:
        return None
    return (
        f"smmpi: the ranks get this shell's AWS settings ({', '.join(names)}); on SageMaker they "
        "get the execution role's credentials, whose rights smmpi does not know"
    )


def forwarding_note(shape: JobShape) -> str | None:
    """The line a multi-host run prints: what ranks see differs by host as on SageMaker."""
    if shape.instances < 2:
        return None
    span = "algo-2" if shape.instances == 2 else f"algo-2..{shape.hosts[-1]}"
    return (
        f"smmpi: as on SageMaker, ranks on {span} see algo-1's SM_* values "
        "(SM_CURRENT_HOST=algo-1); CURRENT_HOST and resourceconfig.json name their own host"
    )
