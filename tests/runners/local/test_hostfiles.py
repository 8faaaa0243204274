"""Each host's variables in a file ``watch.py rank`` applies; the reaper's and a rank's argv."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from smmpi.runners.local.hostfiles import (
    WATCH,
    host_file,
    rank_command,
    reaper_command,
    write_host_file,
)

#: A rank that prints the variables a host file should have set, then exits 3.
SHOW = (
    "import json, os; print(json.dumps({k: os.environ.get(k) for k in ('A', 'B', 'C')})); "
    "raise SystemExit(3)"
)


def test_a_host_file_is_written_under_the_run_dir_as_nul_separated_entries(
    tmp_path: Path,
) -> None:
    path = write_host_file(tmp_path, "algo-2", {"SM_CURRENT_HOST": "algo-2", "X": "a=b"})
    assert path == host_file(tmp_path, "algo-2") == tmp_path / ".smmpi" / "hosts" / "algo-2.env"
    assert path.read_bytes() == b"SM_CURRENT_HOST=algo-2\0X=a=b"


def test_a_rank_started_by_its_launcher_sees_its_hosts_variables_and_ends_as_its_command(
    tmp_path: Path,
) -> None:
    """Values with ``=``, spaces, newlines and JSON (as ``SM_*`` lists are) arrive intact."""
    hosts = json.dumps(["algo-1", "algo-2"])
    env = {"A": "x=1 y=2", "B": "line one\nline two", "C": hosts}
    path = write_host_file(tmp_path, "algo-1", env)
    stacks = tmp_path / "stacks"
    stacks.mkdir()
    argv = rank_command(path, [sys.executable, "-c", SHOW])
    assert argv[:5] == [sys.executable, "-I", "-S", str(WATCH), "rank"]
    assert WATCH.is_file()
    shell = {**os.environ, "A": "from the shell", "SMMPI_STACK_DIR": str(stacks)}
    shell["OMPI_COMM_WORLD_RANK"] = "5"
    proc = subprocess.run(argv, env=shell, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 3, proc.stderr
    assert json.loads(proc.stdout) == env
    record = json.loads((stacks / "rank-5.exit").read_text())
    assert (record["rank"], record["code"], record["signal"]) == (5, 3, None)


def test_the_reaper_command_carries_its_options_and_ends_as_the_command(tmp_path: Path) -> None:
    records = tmp_path / "records"
    records.mkdir()
    command = ["sh", "-c", "exit 7"]
    argv = reaper_command(command, records, ranks=2, remove=tmp_path / "trees", cpu_group="g")
    split = argv.index("--")
    opts = argv[5:split]
    assert argv[:5] == [sys.executable, "-I", "-S", str(WATCH), "run"]
    assert dict(zip(opts[::2], opts[1::2], strict=True)) == {
        "--parent": str(os.getpid()),
        "--record": str(records),
        "--ranks": "2",
        "--remove": str(tmp_path / "trees"),
        "--cpu-group": "g",
    }
    assert argv[split + 1 :] == command
    plain = reaper_command(command, records)
    assert "--ranks" not in plain and "--remove" not in plain and "--cpu-group" not in plain
    proc = subprocess.run(plain, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 7, proc.stderr


#: A child that says whether its own stdin is empty, as smmpi checks before it starts mpirun.
ASK = "from smmpi.runners.local.hostfiles import stdin_is_empty; print(stdin_is_empty())"


def _answer(argv: list[str], stdin: int | None = None, given: str | None = None) -> str:
    proc = subprocess.run(
        argv, stdin=stdin, input=given, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def test_stdin_is_empty_when_it_is_dev_null_or_closed_and_not_when_a_pipe() -> None:
    child = [sys.executable, "-c", ASK]
    assert _answer(child, stdin=subprocess.DEVNULL) == "True"
    assert _answer(child, given="") == "False"  # a pipe, even one already at its end
    assert _answer(["sh", "-c", 'exec "$@" <&-', "sh", *child]) == "True"
