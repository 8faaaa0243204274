"""ModelTrainer's request run here as the container runs it: the SDK's own MPI driver, unchanged.

Every isolated instance runs the request's ``ContainerEntrypoint`` + ``ContainerArguments``
(``sm_train.sh``), with the ``sm_drivers`` and ``code`` channels under
``/opt/ml/input/data`` and a real sshd the driver starts itself. Each rank reports its rank,
world size and hostname; the world must be the job's N x n, ``n`` ranks on every instance.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from smmpi.causes import summary, with_line
from tests.helpers import base_env, processes_left, smmpi, write

WORLD = (
    "import socket\n"
    "from mpi4py import MPI\n"
    "c = MPI.COMM_WORLD\n"
    "print(f'rank {c.rank} of {c.size} on {socket.gethostname()}', flush=True)\n"
)
FAILS = (
    "from mpi4py import MPI\n"
    "print('rank', MPI.COMM_WORLD.Get_rank(), 'starts', flush=True)\n"
    "if MPI.COMM_WORLD.Get_rank() == 3:\n"
    "    raise RuntimeError('rank three is broken')\n"
    "MPI.COMM_WORLD.Barrier()\n"
)


def env_for(tmp_path: Path) -> dict[str, str]:
    env = base_env(tmp_path)
    env.pop("SMMPI_ISOLATION", None)  # a ModelTrainer request runs on isolated hosts only
    return env


def ranks(stdout: str) -> list[str]:
    """The ranks' own lines, without the output tag."""
    return sorted(ln.split(">:", 1)[1] for ln in stdout.splitlines() if ">:rank " in ln)


def expected(instances: int, ppn: int) -> list[str]:
    world = instances * ppn
    return sorted(f"rank {r} of {world} on algo-{r // ppn + 1}" for r in range(world))


def local_run(
    tmp_path: Path, program: Path, instances: int, ppn: int, *more: str, env: dict[str, str]
) -> tuple[int, str, str]:
    argv = ["submit", str(program), "-N", str(instances), "-n", str(ppn)]
    done = smmpi([*argv, "--api", "model-trainer", "--local", *more], env, timeout=400)
    return done.returncode, done.stdout, done.stderr


@pytest.mark.parametrize(("instances", "ppn"), [(1, 2), (2, 1), (2, 2), (3, 2)])
def test_the_drivers_own_start_runs_the_whole_world(
    instances: int, ppn: int, tmp_path: Path
) -> None:
    program = write(tmp_path / "world.py", WORLD)
    code, out, err = local_run(tmp_path, program, instances, ppn, env=env_for(tmp_path))
    assert code == 0, err[-3000:]
    assert ranks(out + err) == expected(instances, ppn)
    # the driver's own steps: sm_train.sh, environment.py, sshd, the ssh bootstrap, its line
    assert "Running MPI Driver" in out + err
    assert "Started SSH daemon." in out + err
    line = next(ln for ln in (out + err).splitlines() if ln.startswith("Executing command: "))
    assert f"-np {ppn} --allow-run-as-root" in line and line.count(" -np ") == 2
    assert f"-np {instances * ppn} " in line  # smmpi's, last: Open MPI 4.1 takes it
    if instances > 1:
        assert "Master can connect to all worker nodes." in out + err
        assert "Writing /tmp/done.algo-1 to algo-2" in out + err
    assert "smmpi: note: smmpi added '-np" in err
    assert "Completed in" in err
    assert processes_left(str(tmp_path)) == []


def test_a_failed_rank_is_named_beside_the_drivers_own_failure_text(tmp_path: Path) -> None:
    program = write(tmp_path / "fails.py", FAILS)
    env = env_for(tmp_path)
    code, out, err = local_run(tmp_path, program, 2, 2, "--json", env=env)
    assert code == 1, err[-3000:]
    assert "smmpi: rank 3 (algo-2) failed: RuntimeError: rank three is broken" in err
    driver_line = next(ln for ln in err.splitlines() if "the MPI driver's failure file" in ln)
    assert driver_line.startswith("smmpi: the MPI driver's failure file (algo-1): ")
    assert "subprocess.CalledProcessError: Command '['mpirun', '--host'" in driver_line
    assert driver_line.endswith("returned non-zero exit status 1.")
    record = json.loads(out)
    assert record["TrainingJobStatus"] == "Failed"
    # algo-1's /opt/ml/output/failure is the driver's own (common/utils.py write_failure_file),
    # and the FailureReason is it, as smmpi serve's (and SageMaker's), then smmpi's line
    hosts = Path(record["LocalHostsDir"])
    failure = (hosts / "algo-1" / "opt" / "ml" / "output" / "failure").read_text()
    assert failure.startswith("Traceback (most recent call last):")
    assert 'sm_drivers/common/utils.py", line' in failure
    line = "rank 3 (algo-2) failed: RuntimeError: rank three is broken"
    assert record["FailureReason"] == with_line(failure, line)
    assert summary(record["FailureReason"]) == line
    assert processes_left(str(tmp_path)) == []


def test_a_hung_run_times_out_with_every_ranks_stack(tmp_path: Path) -> None:
    program = write(
        tmp_path / "hangs.py",
        "import time\n"
        "from mpi4py import MPI\n"
        "print('rank', MPI.COMM_WORLD.rank, 'waits', flush=True)\n"
        "if MPI.COMM_WORLD.rank == 2:\n"
        "    while True:\n"
        "        time.sleep(0.1)\n"
        "MPI.COMM_WORLD.Barrier()\n",
    )
    code, _, err = local_run(tmp_path, program, 2, 2, "--timeout", "60", env=env_for(tmp_path))
    assert code == 124, err[-3000:]
    assert "smmpi: timed out after 60 s; Python stack of every rank:" in err
    for rank, host in ((0, 1), (1, 1), (2, 2), (3, 2)):
        assert f"--- rank {rank} (algo-{host}) ---" in err
    assert 'File "hangs.py", line 6 in <module>' in err  # rank 2, in its loop on algo-2
    assert processes_left(str(tmp_path)) == []


def test_the_ranks_get_no_credentials_of_this_shell(tmp_path: Path) -> None:
    program = write(
        tmp_path / "creds.py",
        "import os\n"
        "from mpi4py import MPI\n"
        "names = sorted(k for k in os.environ if k.startswith('AWS_'))\n"
        "print(f'rank {MPI.COMM_WORLD.rank} sees {names}', flush=True)\n",
    )
    env = {**env_for(tmp_path), "AWS_ACCESS_KEY_ID": "testing-AKIDEXAMPLE"}
    env["AWS_SECRET_ACCESS_KEY"] = "testing-secret-do-not-print"
    code, out, err = local_run(tmp_path, program, 2, 1, env=env)
    assert code == 0, err[-3000:]
    assert sorted(ln.split(">:", 1)[1] for ln in out.splitlines() if " sees " in ln) == [
        "rank 0 sees []",
        "rank 1 sees []",
    ]
    assert "testing-secret-do-not-print" not in out + err
    assert "-x AWS_ACCESS_KEY_ID" not in out + err
    code, out, err = local_run(tmp_path, program, 2, 1, "--with-credentials", env=env)
    assert code == 0, err[-3000:]
    assert "-x AWS_ACCESS_KEY_ID -x AWS_SECRET_ACCESS_KEY" in out + err  # the driver's line
    assert "testing-secret-do-not-print" not in out + err  # its environment log masks it
    seen = [ln.split(">:", 1)[1] for ln in out.splitlines() if " sees " in ln]
    assert len(seen) == 2
    for line in seen:  # the driver forwards them to every rank with -x, as in the container
        assert "'AWS_ACCESS_KEY_ID'" in line and "'AWS_SECRET_ACCESS_KEY'" in line


def test_this_shells_open_mpi_settings_reach_no_instance(tmp_path: Path) -> None:
    """The driver's mpirun on algo-1 reads its instance's environment: this shell's
    OMPI_MCA_plm=isolated there would start every rank on algo-1 ("not enough slots")."""
    program = write(tmp_path / "world.py", WORLD)
    env = {**env_for(tmp_path), "OMPI_MCA_plm": "isolated", "PMIX_MCA_gds": "hash"}
    code, out, err = local_run(tmp_path, program, 2, 1, env=env)
    assert code == 0, err[-3000:]
    assert ranks(out + err) == expected(2, 1)
    assert "smmpi: left out this shell's Open MPI settings (OMPI_MCA_plm, PMIX_MCA_gds)" in err


def test_a_file_channel_reaches_every_instance(tmp_path: Path) -> None:
    """``--input train=file:///DIR``, as for the estimators: DIR's files are in
    /opt/ml/input/data/train on every instance, and the request names the folder."""
    data = tmp_path / "data"
    (data / "sub").mkdir(parents=True)
    write(data / "part-0.csv", "1,2\n")
    write(data / "sub" / "part-1.csv", "3,4\n")
    program = write(
        tmp_path / "channel.py",
        "import os\n"
        "from mpi4py import MPI\n"
        "root = os.environ['SM_CHANNEL_TRAIN']\n"
        "found = sorted(os.path.relpath(os.path.join(d, f), root)\n"
        "               for d, _, fs in os.walk(root) for f in fs)\n"
        "text = open(os.path.join(root, 'sub', 'part-1.csv')).read().strip()\n"
        "print(f'rank {MPI.COMM_WORLD.rank} in {root}: {found} {text}', flush=True)\n",
    )
    env = {**env_for(tmp_path), "SMMPI_LOCAL_JOBS": str(tmp_path / "jobs")}
    uri = f"file://{data}"
    code, out, err = local_run(tmp_path, program, 2, 1, "--input", f"train={uri}", env=env)
    assert code == 0, err[-3000:]
    seen = sorted(ln.split(">:", 1)[1] for ln in out.splitlines() if ">:rank " in ln)
    files = "['part-0.csv', 'sub/part-1.csv'] 3,4"
    assert seen == [f"rank {r} in /opt/ml/input/data/train: {files}" for r in (0, 1)]
    (job,) = (tmp_path / "jobs").iterdir()
    described = json.loads((job / "describe.json").read_text())
    train = next(c for c in described["InputDataConfig"] if c["ChannelName"] == "train")
    assert train["DataSource"]["S3DataSource"]["S3Uri"] == uri
    assert processes_left(str(tmp_path)) == []


def test_a_model_trainer_jobs_metrics_are_applied_to_its_ranks_output(tmp_path: Path) -> None:
    program = write(tmp_path / "loss.py", (
        "from mpi4py import MPI\n"
        "for loss in (0.5, 0.125):\n"
        "    if MPI.COMM_WORLD.rank == 1:\n"
        "        print(f'loss={loss}', flush=True)\n"
        "    MPI.COMM_WORLD.Barrier()\n"
    ))  # fmt: skip
    env = {**env_for(tmp_path), "SMMPI_LOCAL_JOBS": str(tmp_path / "jobs")}
    more = ("--base-job-name", "mt-metrics", "--metric", "loss=loss=([0-9.]+)")
    code, _, err = local_run(tmp_path, program, 2, 1, *more, env=env)
    assert code == 0, err
    (folder,) = (tmp_path / "jobs").iterdir()
    assert (
        err.strip().splitlines()[-1] == f"smmpi: metrics loss 0.125 (smmpi metrics {folder.name})"
    )
    record = json.loads((folder / "describe.json").read_text())
    assert record["AlgorithmSpecification"]["MetricDefinitions"] == [
        {"Name": "loss", "Regex": "loss=([0-9.]+)"}
    ]
    assert [(m["MetricName"], m["Value"]) for m in record["FinalMetricDataList"]] == [
        ("loss", 0.125)
    ]
    assert processes_left(str(tmp_path)) == []
