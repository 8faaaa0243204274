"""Every rank's ``sitecustomize``: what the rank did, recorded by the rank itself.

Local runs copy this file to ``<run dir>/.smmpi/site/sitecustomize.py``, first
on every rank's PYTHONPATH. In the rank (not in the processes it starts) it:
- records the rank's pid (``rank-R.pid``), so no rank is missed at cleanup;
- records the size of the world it is in (``MPI_COMM_WORLD``'s, which Open MPI
  gives every rank as ``OMPI_COMM_WORLD_SIZE``) and its host (``rank-R.world``),
  so a world other than the job's N x n is named;
- arms a stack dump on SIGUSR1 (``rank-R.stack``), so a hung run shows each
  rank's Python stack;
- records the exception that reached the top of the program (``rank-R.exc``:
  not a traceback the program caught and printed itself);
- records whether the rank reached ``MPI_Finalize`` (``rank-R.mpi``): a rank that ends
  with exit code 0 before it is named;
- records a call of ``MPI.Comm.Abort`` and its error code (``rank-R.abort``),
  which the rank's exit code alone cannot tell from ``sys.exit`` or ``os._exit``,
  and the code ``python -m mpi4py`` aborts with at exit for an uncaught
  ``SystemExit`` or exception (``rank-R.status``);
- records where the rank was when the process that started it (the rank
  watcher) ended while the rank ran (``rank-R.orphan``): that process writes
  no record when it is killed with SIGKILL;
- in processes mode, refuses ``Spawn`` as SageMaker's Open MPI does: its mpirun
  gives every slot to a rank, so dynamic processes have none.

Every record file is opened before the program runs and written later through that
descriptor: a program that lowers ``RLIMIT_NOFILE`` or calls ``chroot`` before it fails
is still named, and what the records need is imported in advance.

It does nothing unless loaded as ``sitecustomize`` (importing it from smmpi is
harmless), and it then runs the next ``sitecustomize.py`` on ``sys.path``, as
Python would have without it.
"""

from __future__ import annotations

import atexit
import faulthandler
import json
import os
import signal
import sys
import time
from collections.abc import Callable
from types import ModuleType, TracebackType
from typing import IO, Any

_files: list[IO[str]] = []  # kept open: faulthandler writes to them from a signal handler
LAUNCHER_FD = "SMMPI_LAUNCHER_FD"  # the read end of a pipe only the rank watcher writes to
NO_FREE_SLOTS = "SMMPI_NO_FREE_SLOTS"  # processes mode: Spawn is refused, as on SageMaker
F_SETSIG = 10  # Linux fcntl: the signal sent when the file is ready (here: its writer is gone)


def arm(stack_dir: str | None, rank: str | None) -> None:
    """Record this rank's pid once and arm its records (a rank's children skip it)."""
    if not stack_dir or rank is None:
        return
    try:
        fd = os.open(
            os.path.join(stack_dir, f"rank-{rank}.pid"), os.O_WRONLY | os.O_CREAT | os.O_EXCL
        )
    except OSError:
        return  # a child process of the rank: the rank itself is already armed
    os.write(fd, str(os.getpid()).encode())
    os.close(fd)
    import traceback  # noqa: F401  (what a failure needs, while descriptors and paths remain)

    base = os.path.join(stack_dir, f"rank-{rank}")
    _record_world(base + ".world")
    _dump_on(signal.SIGUSR1, base + ".stack")
    _watch_launcher(os.environ.pop(LAUNCHER_FD, ""), base + ".orphan")
    records = {kind: Record(f"{base}.{kind}") for kind in ("exc", "status", "abort", "mpi")}
    sys.excepthook = _recording(sys.excepthook, records["exc"])
    sys.meta_path.insert(0, _MPIFinder(records, os.environ.get(NO_FREE_SLOTS) == "1"))


def _record_world(path: str) -> None:
    """The rank's world size and its host (``CURRENT_HOST``: its own, in both modes)."""
    import socket

    size = os.environ.get("OMPI_COMM_WORLD_SIZE") or os.environ.get("PMI_SIZE") or ""
    host = os.environ.get("CURRENT_HOST") or socket.gethostname()
    Record(path).write({"size": int(size) if size.isdigit() else None, "host": host})


def _dump_on(signum: int, path: str) -> None:
    """On ``signum``, faulthandler writes every thread's stack to ``path`` (from C: at once,
    even while the rank waits inside MPI)."""
    f = open(path, "w")
    _files.append(f)
    faulthandler.register(signum, file=f, all_threads=True, chain=False)


def orphan_signal() -> int:
    return signal.SIGRTMAX - 3


def _watch_launcher(fd_text: str, path: str) -> None:
    """Have the kernel signal this rank when the watcher's end of the pipe closes."""
    if not fd_text.isdigit():
        return
    import fcntl

    fd = int(fd_text)
    try:
        os.set_inheritable(fd, False)  # the rank's own children do not hold it
        _dump_on(orphan_signal(), path)
        fcntl.fcntl(fd, F_SETSIG, orphan_signal())
        fcntl.fcntl(fd, fcntl.F_SETOWN, os.getpid())
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_ASYNC)
    except (OSError, ValueError, RuntimeError):
        pass  # no record of an orphaned rank; nothing else changes


def exception_line(kind: type[BaseException], value: BaseException) -> str:
    """``ValueError: boom``: the line Python ends a traceback with (its first line only)."""
    import traceback

    parts = traceback.format_exception_only(kind, value)
    line = next((p for p in parts if p[:1] not in (" ", "\t")), parts[-1])
    return (line.strip().splitlines() or [kind.__name__])[0]


class Record:
    """A record file opened now and written later through its descriptor: no new file
    descriptor, no path lookup (the program may have run out of both by then); written
    by the rank only (not by a process it forks)."""

    def __init__(self, path: str) -> None:
        self.fd, self.key, self.pid = -1, (0, 0), os.getpid()
        try:
            flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC
            self.fd = os.open(path, flags, 0o644)
            st = os.fstat(self.fd)
            self.key = (st.st_dev, st.st_ino)
        except OSError:
            pass

    def write(self, row: dict[str, Any]) -> None:
        try:
            st = os.fstat(self.fd)
            if (st.st_dev, st.st_ino) != self.key or os.getpid() != self.pid:
                return  # the program closed it (the number may be another file's now)
            data = json.dumps({**row, "time": time.time()}).encode()
            os.pwrite(self.fd, data, 0)
            os.ftruncate(self.fd, len(data))
        except Exception:  # never let a record change what the program does
            pass


ExceptHook = Callable[[type[BaseException], BaseException, TracebackType | None], Any]


def _recording(after: ExceptHook, record: Record) -> ExceptHook:
    """An excepthook that records the exception in ``record``, then calls ``after``."""

    def hook(kind: type[BaseException], value: BaseException, tb: TracebackType | None) -> None:
        try:
            record.write({"text": exception_line(kind, value)})
        except Exception:  # never let the record hide the traceback
            pass
        after(kind, value, tb)

    return hook


class _MPIFinder:
    """Patches ``mpi4py.MPI`` as it is imported (the rank's own import, whenever it comes)."""

    def __init__(self, records: dict[str, Record], no_free_slots: bool) -> None:
        self.records, self.no_free_slots = records, no_free_slots

    def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
        if name != "mpi4py.MPI":
            return None
        sys.meta_path.remove(self)
        for finder in sys.meta_path:
            spec = getattr(finder, "find_spec", lambda *a: None)(name, path, target)
            if spec is not None and spec.loader is not None:
                break
        else:
            return None
        run = spec.loader.exec_module

        def exec_module(module: ModuleType) -> None:
            run(module)
            _patch(module, self.records, self.no_free_slots)

        spec.loader.exec_module = exec_module
        return spec


def _set_method(cls: type, name: str, function: Callable[..., Any]) -> None:
    """Replace a method of an extension type (immutable to ``setattr``) in its own dict.

    Done as the module is imported, before anything has looked the method up, so no
    lookup cache holds the old one; ctypes (slow to import) tells the type only if some
    other module has imported it already.
    """
    import gc

    namespace = next(r for r in gc.get_referents(cls.__dict__) if isinstance(r, dict))
    namespace[name] = function
    ctypes = sys.modules.get("ctypes")
    if ctypes is not None:
        ctypes.pythonapi.PyType_Modified(ctypes.py_object(cls))


def _patch(mpi: Any, records: dict[str, Record], no_free_slots: bool) -> None:
    """Each patch on its own: an mpi4py without one of these names keeps the others."""
    patches = [_record_exit_status, _record_abort, _record_finalize]
    patches += [_refuse_spawn] if no_free_slots else []
    for patch in patches:
        try:
            patch(mpi, records)
        except Exception:  # run it as it is
            pass


def _record_exit_status(mpi: Any, records: dict[str, Record]) -> None:
    """``python -m mpi4py`` sets the code to abort with at exit (``sys.exit(N)``: N)."""
    set_status = mpi._set_abort_status

    def _set_abort_status(status: Any) -> None:
        row: dict[str, Any] = {"code": status if isinstance(status, int) else 1}
        value = sys.exc_info()[1]  # called within mpi4py's ``except`` block
        try:
            if value is not None and not isinstance(value, SystemExit):
                # the exception too: mpirun may kill the rank before its excepthook runs
                row["text"] = exception_line(type(value), value)
        except Exception:  # the code alone; the rank still aborts
            pass
        records["status"].write(row)
        set_status(status)

    mpi._set_abort_status = _set_abort_status


def _record_abort(mpi: Any, records: dict[str, Record]) -> None:
    abort = mpi.Comm.__dict__["Abort"]

    def Abort(self: Any, errorcode: int = 0) -> None:  # mpi4py's name
        records["abort"].write({"code": int(errorcode)})
        abort(self, errorcode)

    Abort.__doc__ = abort.__doc__
    _set_method(mpi.Comm, "Abort", Abort)


def _record_finalize(mpi: Any, records: dict[str, Record]) -> None:
    """``finalized``: false once MPI is initialized (as mpi4py.MPI is imported); true when
    the rank calls ``MPI.Finalize`` or reaches Python's normal exit (mpi4py finalizes after
    Python's atexit functions)."""
    record, finalize = records["mpi"], mpi.Finalize
    if not mpi.Is_initialized():
        return  # (mpi4py.rc.initialize = False)
    record.write({"finalized": False})

    def Finalize() -> None:  # mpi4py's name
        record.write({"finalized": True})
        finalize()

    Finalize.__doc__ = finalize.__doc__
    mpi.Finalize = Finalize
    atexit.register(record.write, {"finalized": True})


def _refuse_spawn(mpi: Any, records: dict[str, Record]) -> None:
    for name in ("Spawn", "Spawn_multiple"):
        _set_method(mpi.Intracomm, name, _refused(mpi, name))


def _refused(mpi: Any, name: str) -> Callable[..., Any]:
    """What ``Spawn`` does in a SageMaker job: every slot holds a rank, Open MPI refuses."""

    def refuse(self: Any, *args: Any, **kwargs: Any) -> Any:
        raise mpi.Exception(mpi.ERR_SPAWN)

    refuse.__name__ = refuse.__qualname__ = name
    return refuse


def chain(here: str) -> None:
    """Run the next ``sitecustomize.py`` on ``sys.path`` (this file shadows it)."""
    for entry in sys.path:
        candidate = os.path.join(entry or ".", "sitecustomize.py")
        if os.path.abspath(entry or ".") != here and os.path.isfile(candidate):
            with open(candidate) as f:
                code = compile(f.read(), candidate, "exec")
            exec(code, {"__name__": "sitecustomize", "__file__": candidate})
            break


if __name__ == "sitecustomize":
    arm(
        os.environ.get("SMMPI_STACK_DIR"),
        os.environ.get("OMPI_COMM_WORLD_RANK")
        or os.environ.get("PMI_RANK")
        or os.environ.get("PMIX_RANK"),  # srun --mpi=pmix
    )
    chain(os.path.dirname(os.path.abspath(__file__)))
