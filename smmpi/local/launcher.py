"""Run a job here as N emulated instances x n processes, with one local ``mpirun``.

Each emulated instance is one MPMD app context::

    mpirun --oversubscribe --tag-output \
        -np n -x SM_CURRENT_HOST=algo-1 ... --wdir <algo-1>/opt/ml/code python -m mpi4py prog : \
        -np n -x SM_CURRENT_HOST=algo-2 ... --wdir <algo-2>/opt/ml/code python -m mpi4py prog : ...

so ranks are numbered by slot exactly as the container's ``--host algo-1:n,...``
maps them, and each sees its own instance's ``SM_*`` variables and ``/opt/ml``.

Supervision is what makes a local run cheaper than a SageMaker one:
- a rank that raises is named (rank, emulated host, exception) within seconds;
- ``timeout`` prints every rank's Python stack (``faulthandler`` on SIGUSR1,
  armed by a ``sitecustomize`` the ranks load), then kills everything;
- Ctrl-C kills everything; no process outlives the run.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING

from smmpi.local.layout import HostDirs, JobShape, host_dirs, host_of_rank, sm_env, write_config
from smmpi.local.mpi import Launcher, preflight
from smmpi.local.translate import local_flags
from smmpi.logs import FailureScan, LineAssembler, Tagged, is_tagged
from smmpi.plan import parse_custom_mpi_options

if TYPE_CHECKING:
    from smmpi.catalog import Program

EXIT_OK, EXIT_FAILED, EXIT_TIMEOUT, EXIT_INTERRUPTED = 0, 1, 124, 130

# Loaded by every rank's interpreter (it is first on PYTHONPATH): arms a stack dump on SIGUSR1
# and records the rank's pid, so a hang can be shown and no process can be missed at cleanup.
_SITECUSTOMIZE = """\
import faulthandler as _fh
import os as _os
import signal as _signal

_d = _os.environ.get("SMMPI_STACK_DIR")
_r = _os.environ.get("OMPI_COMM_WORLD_RANK") or _os.environ.get("PMI_RANK")
if _d and _r is not None:
    try:
        _fd = _os.open(_os.path.join(_d, "rank-%s.pid" % _r),
                       _os.O_WRONLY | _os.O_CREAT | _os.O_EXCL)
    except OSError:
        _fd = -1  # a child process of the rank: the rank itself is already armed
    if _fd >= 0:
        _os.write(_fd, str(_os.getpid()).encode())
        _os.close(_fd)
        _smmpi_stack_file = open(_os.path.join(_d, "rank-%s.stack" % _r), "w")
        _fh.register(_signal.SIGUSR1, file=_smmpi_stack_file, all_threads=True)

# This file shadows any other sitecustomize.py: run the next one on sys.path, as Python would have.
import sys as _sys

_here = _os.path.dirname(_os.path.abspath(__file__))
for _p in _sys.path:
    _next = _os.path.join(_p or ".", "sitecustomize.py")
    if _os.path.abspath(_p or ".") != _here and _os.path.isfile(_next):
        with open(_next) as _f:
            _code = compile(_f.read(), _next, "exec")
        exec(_code, {"__name__": "sitecustomize", "__file__": _next})
        break
"""


@dataclass
class RunResult:
    exit_code: int
    status: str  # Completed | Failed | TimedOut | Interrupted
    seconds: float
    run_dir: Path
    world_size: int
    failed_rank: int | None = None
    failed_host: str | None = None
    reason: str | None = None
    stacks: dict[int, str] = field(default_factory=dict)

    @property
    def failure_line(self) -> str | None:
        if self.failed_rank is None:
            return self.reason
        return f"rank {self.failed_rank} ({self.failed_host}) failed: {self.reason}"


def mpirun_argv(
    shape: JobShape,
    run_dir: Path,
    launcher: Launcher,
    python: str,
    extra_env: dict[str, str] | None = None,
    extra_paths: Sequence[str] = (),
) -> list[str]:
    """The local mpirun command: one app context per emulated host."""
    argv = [launcher.mpirun, *launcher.base_flags()]
    if launcher.implementation == "openmpi":
        _, custom = parse_custom_mpi_options(shape.custom_mpi_options)
        argv += local_flags(custom)
    stack_dir = run_dir / ".smmpi" / "stacks"
    site_dir = run_dir / ".smmpi" / "site"
    for index, host in enumerate(shape.hosts):
        dirs = host_dirs(run_dir, host)
        env = sm_env(shape, dirs, host)
        env.update(shape.environment)
        env.update(
            PYTHONPATH=os.pathsep.join(
                p
                for p in (str(site_dir), str(dirs.code), *extra_paths, os.environ.get("PYTHONPATH"))
                if p
            ),
            PYTHONUNBUFFERED="1",  # as in SageMaker's framework images
            SMMPI_LOCAL="1",
            SMMPI_STACK_DIR=str(stack_dir),
        )
        if extra_env:
            env.update(extra_env)
        if index:
            argv.append(":")
        argv += ["-np", str(shape.ppn)]
        for key in sorted(env):
            argv += ["-x", f"{key}={env[key]}"]
        argv += ["--wdir", str(dirs.code), python, "-m", "mpi4py", shape.script, *shape.args(dirs)]
    return argv


class _Output:
    """Echo mpirun's output (tags as in SageMaker's log), demux it per rank, scan for failures.

    Each rank's lines are rebuilt by :class:`LineAssembler`, as ``smmpi logs``
    does for CloudWatch, so a rank that prints without a newline never lends
    its words to another rank's line or log file.
    """

    def __init__(self, world_size: int, log_dir: Path | None) -> None:
        self.scan = FailureScan()
        self.lock = threading.Lock()
        self.files: dict[int, IO[str]] = {}
        self.untagged: IO[str] | None = None
        if log_dir is not None:
            log_dir.mkdir(parents=True, exist_ok=True)
            self.untagged = open(log_dir / "mpirun.log", "w", encoding="utf-8")
            for rank in range(world_size):  # one file per rank, even a silent one
                self.files[rank] = open(log_dir / f"rank-{rank}.log", "w", encoding="utf-8")

    def _emit(self, tagged: Tagged, echo: IO[str]) -> None:
        self.scan.feed_tagged(tagged)
        echo.write(f"[1,{tagged.rank}]<{tagged.stream}>:{tagged.text}\n")
        f = self.files.get(tagged.rank)
        if f is not None:
            f.write(tagged.text + "\n")

    def pump(self, stream: IO[bytes], echo: IO[str]) -> None:
        lines = LineAssembler()  # one per pipe: stdout and stderr interleave independently
        for raw in iter(stream.readline, b""):
            line = raw.decode("utf-8", errors="replace").rstrip("\r\n")
            with self.lock:
                if is_tagged(line):
                    for tagged in lines.feed(line):
                        self._emit(tagged, echo)
                else:
                    self.scan.feed_untagged(line)
                    echo.write(line + "\n")
                    if self.untagged is not None:
                        self.untagged.write(line + "\n")
                echo.flush()
        with self.lock:
            for tagged in lines.flush():
                self._emit(tagged, echo)
            echo.flush()

    def close(self) -> None:
        for f in self.files.values():
            f.close()
        if self.untagged is not None:
            self.untagged.close()


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            return f.read().split(") ", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        try:
            os.kill(pid, 0)
        except OSError:
            return False
        return True


class _Supervisor:
    """Owns the mpirun process tree and makes sure none of it outlives the run."""

    def __init__(self, proc: subprocess.Popen[bytes], stack_dir: Path) -> None:
        self.proc, self.stack_dir = proc, stack_dir

    def rank_pids(self) -> dict[int, int]:
        pids: dict[int, int] = {}
        for f in self.stack_dir.glob("rank-*.pid"):
            with contextlib.suppress(ValueError, OSError):
                pids[int(f.stem.split("-", 1)[1])] = int(f.read_text().strip())
        return pids

    def dump_stacks(self, wait: float = 2.0) -> dict[int, str]:
        pids = self.rank_pids()
        for pid in pids.values():
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGUSR1)

        def read() -> dict[int, str]:
            files = {r: self.stack_dir / f"rank-{r}.stack" for r in pids}
            return {r: f.read_text(errors="replace") for r, f in files.items() if f.exists()}

        deadline = time.monotonic() + wait
        stacks = read()
        while time.monotonic() < deadline and not all(stacks.get(r) for r in pids):
            time.sleep(0.05)
            stacks = read()
        time.sleep(0.1)  # let the last frames of a dump in progress land
        return read()

    def kill_all(self, grace: float = 2.0) -> None:
        """SIGTERM the mpirun process group, then SIGKILL whatever is left, ranks included."""
        pgid = self.proc.pid
        with contextlib.suppress(OSError):
            os.killpg(pgid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            pass
        with contextlib.suppress(OSError):
            os.killpg(pgid, signal.SIGKILL)
        self.reap_ranks()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=grace)

    def reap_ranks(self, grace: float = 2.0) -> None:
        """Kill any rank that is still alive (a rank may have left mpirun's process group)."""
        pids = [pid for pid in self.rank_pids().values() if _alive(pid)]
        deadline = time.monotonic() + grace
        while pids and time.monotonic() < deadline:
            time.sleep(0.05)
            pids = [pid for pid in pids if _alive(pid)]
        for pid in pids:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)


def prepare_hosts(
    shape: JobShape,
    run_dir: Path,
    lay_code: Callable[[HostDirs], None],
    hyperparameters_json: dict[str, str] | None = None,
) -> list[HostDirs]:
    """Create every emulated instance's /opt/ml tree and lay out its code dir."""
    all_dirs = []
    for host in shape.hosts:
        dirs = host_dirs(run_dir, host)
        dirs.create()
        write_config(dirs, shape, host, hyperparameters_json)
        lay_code(dirs)
        all_dirs.append(dirs)
    stack_dir = run_dir / ".smmpi" / "stacks"
    site_dir = run_dir / ".smmpi" / "site"
    for d in (stack_dir, site_dir):
        d.mkdir(parents=True, exist_ok=True)
    (site_dir / "sitecustomize.py").write_text(_SITECUSTOMIZE, encoding="utf-8")
    return all_dirs


def execute(
    shape: JobShape,
    run_dir: Path,
    *,
    timeout: float | None = None,
    log_dir: Path | None = None,
    out: IO[str] | None = None,
    err: IO[str] | None = None,
    python: str = sys.executable,
    extra_env: dict[str, str] | None = None,
    extra_paths: Sequence[str] = (),
) -> RunResult:
    """Run the prepared job under supervision and say how it ended."""
    out = out or sys.stdout
    err = err or sys.stderr
    launcher = preflight(python)
    argv = mpirun_argv(shape, run_dir, launcher, python, extra_env, extra_paths)
    env = {**os.environ, **launcher.env()}
    output = _Output(shape.world_size, log_dir)
    start = time.monotonic()
    proc = subprocess.Popen(
        argv,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        env=env,
        start_new_session=True,
    )
    supervisor = _Supervisor(proc, run_dir / ".smmpi" / "stacks")
    assert proc.stdout is not None and proc.stderr is not None
    pumps = [
        threading.Thread(target=output.pump, args=(proc.stdout, out), daemon=True),
        threading.Thread(target=output.pump, args=(proc.stderr, err), daemon=True),
    ]
    for t in pumps:
        t.start()
    deadline = start + timeout if timeout else None
    result = RunResult(EXIT_OK, "Completed", 0.0, run_dir, shape.world_size)
    previous_term = signal.getsignal(signal.SIGTERM)

    def _on_term(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    in_main = threading.current_thread() is threading.main_thread()
    if in_main:
        signal.signal(signal.SIGTERM, _on_term)
    try:
        while True:
            try:
                proc.wait(timeout=0.1)
                break
            except subprocess.TimeoutExpired:
                if deadline is not None and time.monotonic() >= deadline:
                    result.stacks = supervisor.dump_stacks()
                    result.exit_code, result.status = EXIT_TIMEOUT, "TimedOut"
                    result.reason = f"timed out after {timeout:g} s"
                    supervisor.kill_all()
                    break
    except KeyboardInterrupt:
        result.exit_code, result.status = EXIT_INTERRUPTED, "Interrupted"
        result.reason = "interrupted; every rank was stopped"
        supervisor.kill_all()
    finally:
        if in_main:
            signal.signal(signal.SIGTERM, previous_term)
        supervisor.reap_ranks()
        for t in pumps:
            t.join(timeout=5)
        output.close()
    result.seconds = time.monotonic() - start
    if result.exit_code == EXIT_OK and proc.returncode != 0:
        result.exit_code, result.status = EXIT_FAILED, "Failed"
        rank = output.scan.failed_rank()
        if rank is not None:
            result.failed_rank = rank
            result.failed_host = host_of_rank(rank, shape.ppn, shape.instances)
            result.reason = output.scan.reason(rank)
        else:
            result.reason = f"mpirun exited with code {proc.returncode}"
    if result.stacks or result.status == "TimedOut":
        _print_stacks(result, shape, err)
    return result


_LAUNCH_FRAMES = ("<frozen runpy>", "/mpi4py/run.py", "/mpi4py/__main__.py")


def _user_frames(stack: str) -> str:
    """A faulthandler dump without the frames of ``python -m mpi4py`` itself."""
    return "\n".join(
        line
        for line in stack.rstrip().splitlines()
        if not any(marker in line for marker in _LAUNCH_FRAMES)
    )


def _print_stacks(result: RunResult, shape: JobShape, err: IO[str]) -> None:
    err.write(f"smmpi: {result.reason}; Python stack of every rank:\n")
    for rank in range(shape.world_size):
        host = host_of_rank(rank, shape.ppn, shape.instances)
        stack = result.stacks.get(rank)
        err.write(f"--- rank {rank} ({host}) ---\n")
        err.write(
            (
                _user_frames(stack)
                if stack
                else "(no stack: the rank had not started Python or had already exited)"
            )
            + "\n"
        )
    err.flush()


@dataclass
class LocalRun:
    """``smmpi run``: a program on N emulated hosts x n processes, in a throwaway run dir."""

    program: Program
    instances: int
    ppn: int
    args: Sequence[str] = ()
    timeout: float | None = None
    log_dir: str | Path | None = None
    keep: bool = False
    out: IO[str] | None = None
    err: IO[str] | None = None

    def shape(self) -> JobShape:
        return JobShape(
            job_name=f"smmpi-run-{self.program.name}".replace("_", "-")[:63],
            script=self.program.script,
            instances=self.instances,
            ppn=self.ppn,
            user_args=list(self.args),
        )

    def run(self) -> RunResult:
        err = self.err or sys.stderr
        preflight()  # fail on a missing MPI before creating anything
        shape = self.shape()
        run_dir = Path(tempfile.mkdtemp(prefix="smmpi-run-"))
        try:
            prepare_hosts(shape, run_dir, lambda dirs: self.program.copy_to(dirs.code))
            err.write(
                f"smmpi: {self.program.name} on {shape.instances} emulated host(s) x "
                f"{shape.ppn} process(es) = {shape.world_size} ranks\n"
            )
            err.flush()
            result = execute(
                shape,
                run_dir,
                timeout=self.timeout,
                log_dir=Path(self.log_dir) if self.log_dir else None,
                out=self.out,
                err=err,
            )
        finally:
            if not self.keep:
                shutil.rmtree(run_dir, ignore_errors=True)
        if result.exit_code == EXIT_OK:
            err.write(
                f"smmpi: {shape.world_size} ranks on {shape.instances} emulated host(s) "
                f"completed in {result.seconds:.1f} s\n"
            )
        else:
            err.write(f"smmpi: {result.failure_line}\n")
        if self.keep:
            err.write(f"smmpi: host trees kept under {run_dir}\n")
        err.flush()
        return result
