"""The fast mode against exact mode on the same job: what every rank observes of its start.

Each rank reports its whole environment, argv, interpreter, cwd, hostname, uid, umask and
the /opt/ml tree it sees (probe_view.py), under mpirun's output tags. Values that differ
from any run to the next (the run folder, Open MPI's and PMIx's job ids and ports, the
code's upload hash) are compared by name only. What is left must be equal, but for the
differences docs/TOOLKIT.md lists (exact mode's section), asserted here one by one.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from tests.helpers import base_env, smmpi

PROBE = Path(__file__).with_name("probe_view.py")
#: Variables that name this run's ids, ports or session folders: compared by name only.
PER_RUN = ("PMIX_", "OMPI_MCA_orte_", "OMPI_MCA_ess_base_jobid", "OMPI_FILE_LOCATION")
#: The launch agent, which exact mode does not use (mpirun reaches workers through ssh).
FAST_ONLY = {"OMPI_MCA_plm_rsh_agent"}
#: What sshd and PAM give an ssh session, so what ranks on a worker get in the container.
SSH_SESSION = {
    "LOGNAME",
    "MOTD_SHOWN",
    "SHELL",
    "SHLVL",
    "SSH_CLIENT",
    "SSH_CONNECTION",
    "USER",
    "_",
}


def _normalised(value: Any, run_dir: str) -> Any:
    if isinstance(value, str):
        value = value.replace(run_dir, "RUN")
        return re.sub(r"/source/[0-9a-f]{8}/", "/source/HASH/", value)
    if isinstance(value, list):
        return [_normalised(v, run_dir) for v in value]
    return value


def _views(tmp_path: Path, name: str, exact: bool) -> dict[int, dict[str, Any]]:
    env = {**base_env(tmp_path), "SMMPI_TOOLKIT_VENV": "none"}  # exact mode: sshd only
    env.pop("SMMPI_ISOLATION", None)
    tmp = tmp_path / name
    tmp.mkdir()
    args = ["run", str(PROBE), "-N", "3", "-n", "2", "--keep", *(["--exact"] if exact else [])]
    done = smmpi(args, {**env, "TMPDIR": str(tmp)})
    assert done.returncode == 0, done.stderr
    run = next(tmp.glob("smmpi-run-*"))
    run_dir = str(run)
    views = {}
    for line in done.stdout.splitlines():
        if "VIEW " in line:
            tag, _, rank = line.partition("VIEW ")
            found = list(run.glob(f"algo-*/opt/ml/model/view-{rank}.json"))
            view = json.loads(found[0].read_text())
            view["tag"] = tag
            env_of = view.pop("env")
            view["per_run"] = sorted(k for k in env_of if k.startswith(PER_RUN))
            view["env"] = {
                k: _normalised(v, run_dir) for k, v in env_of.items() if not k.startswith(PER_RUN)
            }
            views[view["rank"]] = {k: _normalised(v, run_dir) for k, v in view.items()}
    assert sorted(views) == list(range(6)), done.stdout
    return views


#: The soft open-file limit of a process that an ssh login starts (sshd and its PAM session).
SSH_SOFT_NOFILE = 1024


def _limits_and_etc_environment(fast: dict[str, Any], exact: dict[str, Any], worker: bool) -> None:
    """docs/TOOLKIT.md's two differences beyond the environment, on algo-2..N only: ranks that
    sshd's login session started have a soft open-file limit of 1024; /etc/environment holds
    the instance's whole environment (the fast mode's model of it and more). algo-1's ranks
    have the fast mode's limits and /etc/environment (the toolkit writes none there)."""
    nofile_a, nofile_b = fast.pop("nofile"), exact.pop("nofile")
    etc_a, etc_b = fast.pop("etc_environment"), exact.pop("etc_environment")
    if not worker:
        assert (nofile_b, etc_b) == (nofile_a, etc_a)
        return
    assert nofile_b == [SSH_SOFT_NOFILE, nofile_a[1]], (nofile_a, nofile_b)
    names_a = {line.partition("=")[0] for line in etc_a}
    names_b = {line.partition("=")[0] for line in etc_b}
    assert names_a and names_a <= names_b, sorted(names_a - names_b)


def test_ranks_observe_the_same_start_in_fast_and_exact_mode(tmp_path: Path) -> None:
    fast, exact = _views(tmp_path, "fast", False), _views(tmp_path, "exact", True)
    for rank in range(6):
        a, b = fast[rank], exact[rank]
        env_a, env_b = a.pop("env"), b.pop("env")
        on_worker = b["hostname"] != "algo-1"
        _limits_and_etc_environment(a, b, on_worker)
        assert a == b, rank  # argv, interpreter, cwd, hostname, uid, umask, /opt/ml, tag
        assert set(env_a) - set(env_b) == FAST_ONLY
        assert set(env_b) - set(env_a) == (SSH_SESSION if on_worker else set()), rank
        shared = set(env_a) & set(env_b)
        assert {k: env_a[k] for k in shared} == {k: env_b[k] for k in shared}, rank
        if on_worker:
            assert env_b["SSH_CLIENT"].startswith("198.18.0.1 ")  # from algo-1's mpirun
            assert env_b["USER"] == env_b["LOGNAME"] == "root"


FAILING = {
    "raises": "from mpi4py import MPI\n"
    "if MPI.COMM_WORLD.Get_rank() == 3:\n    raise ValueError('broken on rank three')\n"
    "MPI.COMM_WORLD.Barrier()\n",
    "killed": "import os, signal\nfrom mpi4py import MPI\n"
    "if MPI.COMM_WORLD.Get_rank() == 2:\n    os.kill(os.getpid(), signal.SIGKILL)\n"
    "MPI.COMM_WORLD.Barrier()\n",
}


def _ending(tmp_path: Path, name: str, exact: bool) -> tuple[int, str]:
    env = {**base_env(tmp_path), "SMMPI_TOOLKIT_VENV": "none"}  # exact mode: sshd only
    env.pop("SMMPI_ISOLATION", None)
    program = tmp_path / f"{name}.py"
    if not program.exists():
        program.write_text(FAILING[name])
    argv = ["run", str(program), "-N", "2", "-n", "2", *(["--exact"] if exact else [])]
    done = smmpi(argv, env)
    return done.returncode, done.stderr.strip().splitlines()[-1]


def test_a_failed_rank_and_exit_137_end_alike_in_both_modes(tmp_path: Path) -> None:
    for name in FAILING:
        fast, exact = _ending(tmp_path, name, False), _ending(tmp_path, name, True)
        assert fast == exact, name
        assert fast[0] != 0 and fast[1].startswith("smmpi: rank "), fast
