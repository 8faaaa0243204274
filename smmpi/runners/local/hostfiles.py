"""How a rank is started: its host's variables travel in a file, its end is recorded.

mpirun's command line carries, per emulated host, only an app context that
starts ``watch.py`` with that host's file; ``watch.py`` applies the
variables before it starts the rank. So the command line stays small whatever
the number of hosts and the size of their ``SM_*`` variables (which list every
host), where one ``-x NAME=value`` per variable and host exceeded Linux's limit
at about 200 hosts.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

WATCH = Path(__file__).parents[2] / "supervision" / "watch.py"


def host_file(run_dir: Path, host: str) -> Path:
    return run_dir / ".smmpi" / "hosts" / f"{host}.env"


def write_host_file(run_dir: Path, host: str, env: Mapping[str, str]) -> Path:
    """The file ``watch.py rank`` reads for each rank of ``host``: ``NAME=value``, NUL-separated."""
    path = host_file(run_dir, host)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"\0".join(f"{k}={v}".encode() for k, v in env.items()))
    return path


def rank_command(host: Path, command: Sequence[str], python: str = sys.executable) -> list[str]:
    """What mpirun starts for each rank of a host: the launcher, then the rank's command."""
    return [python, "-I", "-S", str(WATCH), "rank", str(host), "--", *command]


def reaper_command(
    command: Sequence[str],
    record_dir: Path,
    ranks: int | None = None,
    remove: Path | None = None,
    python: str = sys.executable,
    cpu_group: str | None = None,
) -> list[str]:
    """COMMAND under the run's reaper, which ends every process of the run with the run.

    Reusable by any launcher: give it the command that starts the run's
    processes, the records folder (where ranks write ``rank-R.exit``), the
    number of ranks, a folder to remove if this process dies, and the CPU cgroup to make
    and hold the run in (see :mod:`smmpi.supervision.cpu_share`).
    """
    argv = [python, "-I", "-S", str(WATCH), "run", "--parent", str(os.getpid())]
    argv += ["--record", str(record_dir)]
    if ranks is not None:
        argv += ["--ranks", str(ranks)]
    if remove is not None:
        argv += ["--remove", str(remove)]
    if cpu_group is not None:
        argv += ["--cpu-group", cpu_group]
    return [*argv, "--", *command]


def stdin_is_empty() -> bool:
    """True when our stdin is closed or /dev/null (mpirun would leave rank 0's read waiting)."""
    try:
        st = os.fstat(0)
        null = os.stat(os.devnull)
    except OSError:
        return True
    return (st.st_rdev, st.st_ino) == (null.st_rdev, null.st_ino)
