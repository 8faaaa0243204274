"""CPU seconds by command for everything a command line starts (for example ``make test``).

``python benchmarks/cpu_by_command.py -- make test`` turns on the kernel's process accounting
(``acct(2)``, root only) into a file of its own for as long as the command runs, then prints the
user plus system CPU seconds of every process that ended meanwhile, grouped by its name. A
process named ``python`` or ``sh`` is shown with the nearest ancestor that has another name
(``python <- orted`` is a rank on an emulated instance, ``python <- pytest`` a test's own
subprocess). Processes in other PID namespaces (the emulated instances) are counted too.

Accounting covers the whole machine while it is on: run it where nothing else runs. Only one
accounting file can be on at a time; a file another tool turned on is replaced until the end. A
run inside another (``make test`` runs this script's own test) leaves accounting as it is and
reads the records the outer run's file gains meanwhile.
"""

from __future__ import annotations

import argparse
import collections
import ctypes
import os
import struct
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

#: ``struct acct_v3`` (linux/acct.h): flag, version, tty, exitcode, uid, gid, pid, ppid,
#: btime, etime, then utime, stime, mem, io, rw, minflt, majflt, swaps as comp_t, comm[16]
RECORD = struct.Struct("<BBHIIIIIIf8H16s")
TICKS = 100  # AHZ: comp_t times are in 1/100 s
#: A nested run (`make test` runs this script's test) reads the outer run's file instead of
#: turning accounting off under it
NESTED = "SMMPI_CPU_BY_COMMAND_LOG"
PLAIN = {"python", "python3", "python3.11", "sh", "bash", "env", "timeout", "nsenter", "unshare"}


def _comp(value: int) -> int:
    """A comp_t (13-bit mantissa, 3-bit base-8 exponent) as an integer."""
    return (value & 0x1FFF) << (3 * ((value >> 13) & 7))


def records(data: bytes) -> Iterator[tuple[int, int, str, float]]:
    """(pid, ppid, name, CPU seconds) of each version-3 record."""
    for offset in range(0, len(data) - RECORD.size + 1, RECORD.size):
        r = RECORD.unpack_from(data, offset)
        if r[1] == 3:
            name = r[18].split(b"\0")[0].decode(errors="replace")
            yield r[6], r[7], name, (_comp(r[10]) + _comp(r[11])) / TICKS


def by_command(data: bytes) -> dict[str, float]:
    """CPU seconds per name; a plain name (``python``) gets its nearest other-named ancestor."""
    rows = list(records(data))
    names = {pid: (ppid, name) for pid, ppid, name, _ in rows}  # a reused pid: its last
    totals: dict[str, float] = collections.defaultdict(float)
    for _, ppid, name, cpu in rows:
        key = name
        if name in PLAIN:
            above, parent = "?", ppid
            for _ in range(8):
                if parent not in names:
                    break
                parent, up = names[parent]
                if up not in PLAIN:
                    above = up
                    break
            key = f"{name} <- {above}"
        totals[key] += cpu
    return totals


def _acct(path: str | None) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.acct(path.encode() if path else None) != 0:
        number = ctypes.get_errno()
        raise OSError(number, f"acct({path}): {os.strerror(number)}")


def _counted(command: list[str]) -> tuple[int, dict[str, float]]:
    """Run the command with accounting on into a file of its own (named to nested runs)."""
    with tempfile.TemporaryDirectory() as folder:
        log = Path(folder) / "pacct"
        log.touch(mode=0o600)
        _acct(str(log))
        try:
            code = subprocess.run(command, env={**os.environ, NESTED: str(log)}).returncode
        finally:
            _acct(None)
        return code, by_command(log.read_bytes())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--most", type=int, default=30, help="rows to print")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- COMMAND ...")
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give a command after --")
    if outer := os.environ.get(NESTED):  # inside another's count: read what it records
        start = Path(outer).stat().st_size
        code = subprocess.run(command).returncode
        with open(outer, "rb") as log:
            log.seek(start - start % RECORD.size)
            totals = by_command(log.read())
    else:
        code, totals = _counted(command)
    print(f"exit {code}; {sum(totals.values()):.0f} CPU s in all", file=sys.stderr)
    for key, cpu in sorted(totals.items(), key=lambda row: -row[1])[: args.most]:
        print(f"{cpu:9.1f}  {key}", file=sys.stderr)
    return code


if __name__ == "__main__":
    if os.geteuid() != 0:
        sys.exit("cpu_by_command: process accounting needs root")
    sys.exit(main())
