"""What each rank of a real local job sees, against the toolkit run on that job's own host trees.

``smmpi submit --local -N 3 -n 2`` runs a program that dumps its environment
from every rank; the real toolkit then runs on the job's host trees (the ones
the ranks used), and each rank's environment must equal the toolkit's for its
host, variable by variable, modulo the documented substitutions
(:mod:`tests.oracle.compare`) and Open MPI's own variables.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import smmpi
from tests.oracle import smmpi_side
from tests.oracle.compare import LOCAL_ONLY, LOCAL_PREFIX, Substitutions, env_diff
from tests.oracle.oracle import ask
from tests.oracle.ranks import rank_envs

DUMP = """\
import json, os
from mpi4py import MPI

rank = MPI.COMM_WORLD.Get_rank()
with open(os.path.join(os.environ["DUMP_DIR"], f"rank-{rank}.json"), "w") as f:
    json.dump(dict(os.environ), f)
"""
# Open MPI's own variables: set by mpirun/orted for every rank, in the container too.
MPI_OWN = ("OMPI_", "OPAL_", "PMIX_", "PRTE_", "ORTE_", "HWLOC_")
MPI_OWN_NAMES = frozenset({"PWD", "LC_CTYPE", "IPATH_NO_BACKTRACE", "HFI_NO_BACKTRACE"})
SHELL_SECRETS = {
    "AWS_ACCESS_KEY_ID": "AKIDLEAKEDFROMSHELL",
    "AWS_SECRET_ACCESS_KEY": "secret-leaked-from-shell",
    "AWS_SESSION_TOKEN": "token-leaked-from-shell",
    "USER_SHELL_ONLY_MARKER": "from-the-users-shell",
}


def _run(framework: str, tmp_path: Path, env: dict[str, str]) -> dict[str, Any]:
    src = tmp_path / "src"
    src.mkdir()
    (src / "dump.py").write_text(DUMP, encoding="utf-8")
    dumps = tmp_path / "dumps"
    dumps.mkdir()
    run_env = {**env, **SHELL_SECRETS, "SMMPI_LOCAL_JOBS": str(tmp_path / "jobs")}
    args = ["submit", str(src / "dump.py"), "--source-dir", str(src), "-N", "3", "-n", "2"]
    args += ["--framework", framework, "--local", "--job-name", f"oracle-{framework}"]
    args += ["--env", f"DUMP_DIR={dumps}", "--hyperparameter", "epochs=2"]
    done = smmpi(args, run_env)
    assert done.returncode == 0, done.stderr
    record = json.loads((tmp_path / "jobs" / f"oracle-{framework}" / "describe.json").read_text())
    ranks = {int(p.stem.split("-")[1]): json.loads(p.read_text()) for p in dumps.glob("*.json")}
    return {"record": record, "ranks": ranks, "stderr": done.stderr}


@pytest.mark.parametrize("framework", ["tensorflow", "pytorch"])
def test_every_rank_sees_what_the_toolkit_gives_its_host(
    framework: str, tmp_path: Path, env: dict[str, str]
) -> None:
    run = _run(framework, tmp_path, env)
    record = run["record"]
    hosts_dir = Path(record["LocalHostsDir"])
    roots = {h.name: str(h / "opt" / "ml") for h in sorted(hosts_dir.glob("algo-*"))}
    request = {k: record[k] for k in ("HyperParameters", "AlgorithmSpecification")}
    request |= {k: record[k] for k in ("ResourceConfig", "Environment", "TrainingJobName")}
    case = {"id": "local", "hosts": roots, **smmpi_side.container_start(request)}
    answer = ask([case])["cases"]["local"]
    expected = rank_envs(answer)
    subs = Substitutions(
        roots=list(roots.values()),
        pythons=[answer["algo-1"]["command"][answer["algo-1"]["command"].index("-m") - 1]],
    )
    assert sorted(run["ranks"]) == list(range(6))
    problems = []
    for rank, seen in sorted(run["ranks"].items()):
        host = f"algo-{rank // 2 + 1}"
        ours = {
            k: v
            for k, v in seen.items()
            if not k.startswith((*MPI_OWN, LOCAL_PREFIX)) and k not in MPI_OWN_NAMES | LOCAL_ONLY
        }
        theirs = {k: v for k, v in expected[host].items() if k not in LOCAL_ONLY}
        problems += [f"rank {rank} ({host}) {line}" for line in env_diff(theirs, ours, subs)]
        leaked = sorted(set(SHELL_SECRETS) & set(seen))
        problems += [
            f"rank {rank} ({host}) {name}: reached the rank from the shell" for name in leaked
        ]
    assert not problems, "\n".join(problems)
