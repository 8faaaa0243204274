"""What each rank of a real local job sees, against the toolkit run on that job's own host trees.

``smmpi submit --local -N 3 -n 2`` runs a program that dumps its environment
from every rank; the real toolkit then runs on the job's host trees (the ones
the ranks used), and each rank's environment must equal the toolkit's for its
host, variable by variable, modulo the documented substitutions
(:mod:`tests.oracle.compare`) and Open MPI's own variables.
"""

from __future__ import annotations

import json
import shutil
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
# into the rank's own model dir (an isolated instance's /tmp is not this machine's)
with open(os.path.join(os.environ["SM_MODEL_DIR"], f"rank-{rank}.json"), "w") as f:
    json.dump(dict(os.environ), f)
"""


def _dumps(hosts_dir: Path) -> dict[int, dict[str, str]]:
    """What every rank dumped, from each instance's model dir on this machine."""
    files = hosts_dir.glob("algo-*/opt/ml/model/rank-*.json")
    return {int(p.stem.split("-")[1]): json.loads(p.read_text()) for p in files}


# Open MPI's own variables: set by mpirun/orted for every rank, in the container too.
MPI_OWN = ("OMPI_", "OPAL_", "PMIX_", "PRTE_", "ORTE_", "HWLOC_")
MPI_OWN_NAMES = frozenset({"PWD", "IPATH_NO_BACKTRACE", "HFI_NO_BACKTRACE"})
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
    run_env = {**env, **SHELL_SECRETS, "SMMPI_LOCAL_JOBS": str(tmp_path / "jobs")}
    args = ["submit", str(src / "dump.py"), "--source-dir", str(src), "-N", "3", "-n", "2"]
    args += ["--framework", framework, "--local", "--job-name", f"oracle-{framework}"]
    args += ["--hyperparameter", "epochs=2"]
    done = smmpi(args, run_env)
    assert done.returncode == 0, done.stderr
    record = json.loads((tmp_path / "jobs" / f"oracle-{framework}" / "describe.json").read_text())
    ranks = _dumps(Path(record["LocalHostsDir"]))
    return {"record": record, "ranks": ranks, "stderr": done.stderr}


def _compare(
    ranks: dict[int, dict[str, str]], roots: dict[str, str], start: dict[str, Any], ppn: int
) -> list[str]:
    """Each rank's environment against the toolkit's for its host, run on the same trees."""
    answer = ask([{"id": "local", "hosts": roots, **start}])["cases"]["local"]
    expected = rank_envs(answer)
    command = answer["algo-1"]["command"]
    subs = Substitutions(roots=list(roots.values()), pythons=[command[command.index("-m") - 1]])
    assert sorted(ranks) == list(range(len(roots) * ppn))
    problems = []
    for rank, seen in sorted(ranks.items()):
        host = f"algo-{rank // ppn + 1}"
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
    return problems


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
    problems = _compare(run["ranks"], roots, smmpi_side.container_start(request), 2)
    assert not problems, "\n".join(problems)


def test_smmpi_run_gives_ranks_what_a_request_would(tmp_path: Path, env: dict[str, str]) -> None:
    """`smmpi run` (no request) writes a request's config files: the toolkit, run on its kept
    trees, finds MPI, the processes per host and ``--model_dir``, and gives each host what the
    ranks saw; ``--instance-type`` sets the instance the ranks see."""
    src = tmp_path / "src"
    src.mkdir()
    (src / "dump.py").write_text(DUMP, encoding="utf-8")
    run_env = {**env, **SHELL_SECRETS}
    args = ["run", str(src / "dump.py"), "--source-dir", str(src), "-N", "2", "-n", "2"]
    args += ["--instance-type", "ml.p3.8xlarge", "--keep"]
    done = smmpi(args, run_env)
    assert done.returncode == 0, done.stderr
    kept = Path(done.stderr.split("host trees kept under ", 1)[1].split()[0])
    try:
        _check_kept_trees(kept, src)
    finally:
        shutil.rmtree(kept)


def _check_kept_trees(kept: Path, src: Path) -> None:
    roots = {h.name: str(h / "opt" / "ml") for h in sorted(kept.glob("algo-*"))}
    start = smmpi_side.container_start_of(
        smmpi_side.run_shape(src / "dump.py", 2, 2, "ml.p3.8xlarge")
    )
    ranks = _dumps(kept)
    problems = _compare(ranks, roots, start, 2)
    assert not problems, "\n".join(problems)
    assert ranks[3]["SM_NUM_GPUS"] == "4"
    answer = ask([{"id": "run", "hosts": roots, **start}])["cases"]["run"]
    command = answer["algo-1"]["command"]
    assert command[command.index("-np") + 1] == "4"
    assert command[-3:] == ["dump.py", "--model_dir", "/opt/ml/model"]


ECHO = """\
import json, os
from mpi4py import MPI

if MPI.COMM_WORLD.Get_rank() == 1:
    names = ("USER_SHELL_ONLY_MARKER", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN")
    print("SEEN " + json.dumps({n: os.environ.get(n) for n in names}))
"""


def test_credentials_and_variables_reach_ranks_only_when_asked(
    tmp_path: Path, env: dict[str, str]
) -> None:
    script = tmp_path / "echo.py"
    script.write_text(ECHO, encoding="utf-8")
    run_env = {**env, **SHELL_SECRETS}

    def seen(*flags: str) -> tuple[dict[str, Any], str]:
        done = smmpi(["run", str(script), "-N", "2", "-n", "1", *flags], run_env)
        assert done.returncode == 0, done.stderr
        line = next(ln for ln in done.stdout.splitlines() if "SEEN " in ln)
        return json.loads(line.split("SEEN ", 1)[1]), done.stderr

    values, err = seen()
    assert values == dict.fromkeys(values)
    assert "AWS" not in err
    values, err = seen("--pass-env", "USER_SHELL_ONLY_MARKER")
    assert values["USER_SHELL_ONLY_MARKER"] == "from-the-users-shell"
    assert values["AWS_SECRET_ACCESS_KEY"] is None
    values, err = seen("--with-credentials")
    assert values["AWS_SECRET_ACCESS_KEY"] == "secret-leaked-from-shell"
    assert values["AWS_SESSION_TOKEN"] == "token-leaked-from-shell"
    assert "whose rights smmpi does not know" in err
    assert "secret-leaked-from-shell" not in err


@pytest.mark.parametrize(
    ("args", "field"),
    [
        (["run", "demo", "--pass-env", "SMMPI_NOT_SET_ANYWHERE"], "pass-env"),
        (["run", "demo", "--pass-env", "BAD-NAME"], "pass-env"),
        (["submit", "demo", "-N", "1", "-n", "1", "--dry-run", "--pass-env", "HOME"], "--pass-env"),
        (["submit", "demo", "-N", "1", "-n", "1", "--with-credentials"], "--with-credentials"),
    ],
)
def test_bad_pass_env_is_refused(args: list[str], field: str, env: dict[str, str]) -> None:
    done = smmpi(args, env)
    assert done.returncode == 2, done.stderr
    assert field in done.stderr and len(done.stderr.strip().splitlines()) == 1
