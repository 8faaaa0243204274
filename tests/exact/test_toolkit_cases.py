"""The fast mode against exact mode with the real toolkit, case by case: a requirements.txt that
installs and one that does not, a setup.py, a shell-script entry point under MPI, an entry name
the toolkit refuses, exit 137, and a worker whose sshd was killed.

Each case runs the same job both ways and compares what the two report: exit code, the last
line, each rank's output, the container's failure file. docs/TOOLKIT.md lists every difference
with its reason. Each exact run costs the toolkit's own waits (about a minute).
"""

from __future__ import annotations

import base64
import hashlib
import importlib.metadata
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.exact.test_toolkit import TF, VENV
from tests.helpers import ROLE, base_env, processes_left, smmpi, write

#: A case runs its job up to three times (fast, exact, exact again), each run allowed 300 s: on a
#: machine with other suites beside it the setup.py case took over the suite-wide 300 s (165 s
#: with load 9-13, over 300 s with load 15-20) while each of its runs was within its own limit
pytestmark = pytest.mark.timeout(1200)
DRIVER = Path(__file__).with_name("request_driver.py")
_TAG = re.compile(r"\[1,mpirank:(\d+),algo-\d+\]<stdout>:(.*)")
PYTHON = ".".join(map(str, sys.version_info[:3]))


def _env(tmp_path: Path) -> dict[str, str]:
    tmp_path.mkdir(parents=True, exist_ok=True)
    env = base_env(tmp_path)
    env.pop("SMMPI_ISOLATION", None)
    (tmp_path / "tmp").mkdir(exist_ok=True)
    return env | {
        "TMPDIR": str(tmp_path / "tmp"),
        "SMMPI_LOCAL_JOBS": str(tmp_path / "jobs"),
        "SMMPI_TOOLKIT_VENV": VENV,
        "SMMPI_TOOLKIT_TF": TF,
    }


def _wheel(folder: Path, name: str, requires_python: str = "") -> str:
    """A wheel of one module ``name`` (VALUE = 42), made here: pip installs it offline."""
    dist = f"{name}-1.0.dist-info"
    needs = f"Requires-Python: {requires_python}\n" if requires_python else ""
    files = {
        f"{name}.py": "VALUE = 42\n",
        f"{dist}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n{needs}",
        f"{dist}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
        "Tag: py3-none-any\n",
    }
    record = []
    filename = f"{name}-1.0-py3-none-any.whl"
    with zipfile.ZipFile(folder / filename, "w") as wheel:
        for path, text in files.items():
            wheel.writestr(path, text)
            digest = hashlib.sha256(text.encode()).digest()
            encoded = base64.urlsafe_b64encode(digest).rstrip(b"=").decode()
            record.append(f"{path},sha256={encoded},{len(text.encode())}")
        wheel.writestr(f"{dist}/RECORD", "\n".join([*record, f"{dist}/RECORD,,"]) + "\n")
    return filename


def _submit(
    tmp_path: Path, code: Path, entry: str, exact: bool, *extra: str
) -> subprocess.CompletedProcess[str]:
    mode = "exact" if exact else "fast"
    argv = ["submit", str(code / entry), "--source-dir", str(code), "-N", "2", "-n", "2"]
    argv += ["--local", "--job-name", f"case-{mode}", "--region", "us-west-2", "--role", ROLE]
    argv += ["--framework", "pytorch", "--framework-version", "2.8.0", "--py-version", "py312"]
    done = smmpi([*argv, *(["--exact"] * exact), *extra], _env(tmp_path / mode), timeout=300)
    assert processes_left(str(tmp_path / mode)) == []
    return done


def _request(
    tmp_path: Path, name: str, program: Path, exact: bool
) -> subprocess.CompletedProcess[str]:
    mode = "exact" if exact else "fast"
    env = _env(tmp_path / mode)
    argv = [sys.executable, str(DRIVER), name, str(program), mode]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300)
    assert processes_left(str(tmp_path / mode)) == []
    return done


def _said(stdout: str) -> dict[int, list[str]]:
    """Each rank's output as words (the toolkit's tagger may split a line where it reads)."""
    words: dict[int, list[str]] = {}
    for line in stdout.splitlines():
        m = _TAG.match(line)
        if m:
            words.setdefault(int(m[1]), []).extend(m[2].split())
    return {rank: sorted(w) for rank, w in words.items()}


def _last(done: subprocess.CompletedProcess[str]) -> str:
    return done.stderr.strip().splitlines()[-1]


def _failure(tmp_path: Path, mode: str, host: str = "algo-1") -> str:
    folder = tmp_path / mode / "jobs" / f"case-{mode}" / "hosts" / host / "opt" / "ml"
    return (folder / "output" / "failure").read_text()


def test_a_requirements_txt_installs_alike(tmp_path: Path) -> None:
    code = tmp_path / "code"
    code.mkdir()
    wheel = _wheel(code, "smmpi_probe_pkg")
    write(code / "requirements.txt", f"./{wheel}\n")  # relative to the code dir, in both
    write(
        code / "train.py",
        "from mpi4py import MPI\nimport smmpi_probe_pkg\n"
        "print('value', MPI.COMM_WORLD.rank, smmpi_probe_pkg.VALUE, flush=True)\n",
    )
    fast = _submit(tmp_path, code, "train.py", False, "--install-requirements")
    exact = _submit(tmp_path, code, "train.py", True)
    assert (fast.returncode, exact.returncode) == (0, 0), exact.stderr
    assert (
        _said(fast.stdout)
        == _said(exact.stdout)
        == {r: sorted(["value", str(r), "42"]) for r in range(4)}
    )
    assert exact.stderr.count("Successfully installed smmpi-probe-pkg-1.0") == 2  # per instance


def test_a_requirements_txt_that_does_not_install(tmp_path: Path) -> None:
    code = tmp_path / "code"
    code.mkdir()
    write(code / "requirements.txt", f"./{_wheel(code, 'smmpi_old_pkg', '<3')}\n")
    write(code / "train.py", "from mpi4py import MPI\nprint('ran', MPI.COMM_WORLD.rank)\n")
    pip_says = f"ERROR: Package 'smmpi-old-pkg' requires a different Python: {PYTHON} not in '<3'"
    fast = _submit(tmp_path, code, "train.py", False, "--install-requirements")
    assert fast.returncode == 1
    assert _last(fast) == f"smmpi: installing requirements.txt failed: {pip_says}"
    assert not (tmp_path / "fast" / "jobs" / "case-fast").exists()  # it never started
    exact = _submit(tmp_path, code, "train.py", True)
    assert exact.returncode == 1
    assert pip_says in exact.stderr  # the same pip, the same words
    assert _last(exact).startswith(
        "smmpi: algo-1's /opt/ml/output/failure: InstallRequirementsError: ExitCode 1 "
        'ErrorMessage ""'
    ), exact.stderr
    assert _failure(tmp_path, "exact").startswith("InstallRequirementsError:\nExitCode 1\n")
    assert "ran" not in exact.stdout


def test_a_setup_py_needs_an_index_the_instances_can_read_under_the_toolkit(tmp_path: Path) -> None:
    code = tmp_path / "code"
    code.mkdir()
    write(
        code / "setup.py",
        "from setuptools import setup\n"
        "setup(name='smmpi_setup_probe', version='1.0', py_modules=['train', 'helper'])\n",
    )
    write(code / "helper.py", "VALUE = 7\n")
    write(
        code / "train.py",
        "from mpi4py import MPI\nimport helper\n"
        "print('setup', MPI.COMM_WORLD.rank, helper.VALUE, __name__, flush=True)\n",
    )
    fast = _submit(tmp_path, code, "train.py", False)
    assert fast.returncode == 0, fast.stderr
    assert _said(fast.stdout) == {r: sorted(["setup", str(r), "7", "__main__"]) for r in range(4)}
    # the toolkit's `pip install .` builds in isolation: it fetches setuptools from the index
    # pip's configuration names. The instances see this machine's /etc (its pip.conf too), not
    # its /root: PIP_CONFIG_FILE=/dev/null leaves them PyPI only, which they cannot reach
    # (docs/TOOLKIT.md)
    pypi_only = ["--env", "PIP_CONFIG_FILE=/dev/null"]
    exact = _submit(tmp_path, code, "train.py", True, *pypi_only)
    assert exact.returncode == 1
    assert "when installing build dependencies" in exact.stderr
    assert _last(exact).startswith("smmpi: algo-1's /opt/ml/output/failure: InstallModuleError:")
    # an index the instances can read (a folder with setuptools): the build succeeds, as on
    # SageMaker with PyPI
    pin = f"setuptools=={importlib.metadata.version('setuptools')}"  # needs no `wheel`
    got = subprocess.run(
        [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary", ":all:",
         "-d", str(code / "wheels"), pin],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert got.returncode == 0, got.stderr
    readable = ["--env", "PIP_NO_INDEX=1", "--env", "PIP_FIND_LINKS=/opt/ml/code/wheels"]
    shutil.rmtree(tmp_path / "exact")
    exact = _submit(tmp_path, code, "train.py", True, *pypi_only, *readable)
    assert exact.returncode == 0, exact.stderr[-3000:]
    assert _said(exact.stdout) == {r: sorted(["setup", str(r), "7", "__main__"]) for r in range(4)}


def test_a_shell_script_entry_point_runs_under_mpi_with_the_toolkit_only(tmp_path: Path) -> None:
    script = write(
        tmp_path / "train.sh", '#!/bin/sh\necho "shell $OMPI_COMM_WORLD_RANK $(hostname)"\n'
    )
    fast = _request(tmp_path, "train.sh", script, False)
    assert fast.returncode == 2
    assert fast.stderr.strip().splitlines() == [
        "smmpi: invalid HyperParameters.sagemaker_program: 'train.sh'; allowed: a Python file "
        "(.py), or any name with a setup.py in the code: the container runs other entry points "
        "with /bin/sh under mpirun, which only --exact runs here"
    ]
    assert not (tmp_path / "fast" / "jobs").exists()
    exact = _request(tmp_path, "train.sh", script, True)
    assert exact.returncode == 0, exact.stderr
    hosts = {0: "algo-1", 1: "algo-1", 2: "algo-2", 3: "algo-2"}
    assert _said(exact.stdout) == {r: sorted(["shell", str(r), h]) for r, h in hosts.items()}


def test_an_entry_name_the_toolkit_refuses(tmp_path: Path) -> None:
    program = write(tmp_path / "program.py", "print('ran')\n")
    fast = _request(tmp_path, "-bad.py", program, False)
    assert fast.returncode == 2
    assert fast.stderr.strip().splitlines() == [
        "smmpi: invalid HyperParameters.sagemaker_program: '-bad.py'; allowed: a file name "
        "matching [A-Za-z0-9._][A-Za-z0-9._+-]* with no . or .. folder (the SageMaker "
        "container refuses others)"
    ]
    exact = _request(tmp_path, "-bad.py", program, True)
    assert exact.returncode == 1
    assert _last(exact).startswith(
        "smmpi: algo-1's /opt/ml/output/failure: The training entry point '-bad.py' "
        "cannot be used because it contains a leading '-'"
    ), exact.stderr
    assert "ran" not in exact.stdout


def test_exit_137_is_out_of_memory_in_both(tmp_path: Path) -> None:
    code = tmp_path / "code"
    code.mkdir()
    write(
        code / "train.py",
        "import os\nfrom mpi4py import MPI\n"
        "if MPI.COMM_WORLD.rank == 1:\n    os._exit(137)\nMPI.COMM_WORLD.Barrier()\n",
    )
    fast, exact = (_submit(tmp_path, code, "train.py", exact) for exact in (False, True))
    assert fast.returncode == exact.returncode == 1
    assert _last(fast) == _last(exact) == "smmpi: rank 1 (algo-1) failed: exit code 137"
    # the same file but for the line's interpreter and gethostname shim (the image's paths)
    head = 'ExecuteUserScriptError:\nExitCode 137\nErrorMessage ""\n'
    head += 'ExtraInfo "OutOfMemory: Process killed by SIGKILL (signal 9)"\nCommand "mpirun '
    assert _failure(tmp_path, "fast").startswith(head)
    assert _failure(tmp_path, "exact").startswith(head)


def test_a_worker_whose_sshd_was_killed(tmp_path: Path) -> None:
    code = tmp_path / "code"
    code.mkdir()
    write(
        code / "train.py",
        "import os, signal, socket\nfrom mpi4py import MPI\nworld = MPI.COMM_WORLD\n"
        "if socket.gethostname() == 'algo-2' and world.rank == world.size - 1:\n"
        "    for pid in filter(str.isdigit, os.listdir('/proc')):\n"
        "        try:\n"
        "            cmd = open(f'/proc/{pid}/cmdline', 'rb').read().replace(b'\\0', b' ')\n"
        "        except OSError:\n            continue\n"
        "        words = cmd.split()\n"
        "        if words and b'sshd' in words[0] and b'-D' in words:  # the listener\n"
        "            os.kill(int(pid), signal.SIGKILL)\n"
        "            print('killed-sshd', flush=True)\n"
        "world.Barrier()\nprint('done', world.rank, flush=True)\n",
    )
    fast, exact = (_submit(tmp_path, code, "train.py", exact) for exact in (False, True))
    assert fast.returncode == exact.returncode == 0, exact.stderr
    done = {r: sorted(["done", str(r)]) for r in range(4)}
    assert _said(fast.stdout) == done  # no sshd in the fast mode: nothing to kill
    assert _said(exact.stdout) == {**done, 3: sorted(["done", "3", "killed-sshd"])}
    # algo-1 cannot write algo-2's status file through ssh any more; the job still completes
    assert "Failed to create status file onto algo-2" in exact.stderr


def test_a_request_naming_a_dot_folder_is_refused_as_the_toolkit_refuses_it(
    tmp_path: Path,
) -> None:
    """sagemaker-training 5.x refuses a ``.`` or ``..`` segment too (the pattern alone allows
    them): the fast mode refuses such a request before anything runs."""
    program = write(tmp_path / "program.py", "print('ran')\n")
    for name in ("../train.py", "./train.py", "src/../train.py"):
        fast = _request(tmp_path, name, program, False)
        assert fast.returncode == 2, name
        assert fast.stderr.strip().splitlines() == [
            f"smmpi: invalid HyperParameters.sagemaker_program: '{name}'; allowed: a file name "
            "matching [A-Za-z0-9._][A-Za-z0-9._+-]* with no . or .. folder (the SageMaker "
            "container refuses others)"
        ]
    assert not (tmp_path / "fast" / "jobs").exists()


def test_a_pytorch_images_toolkit_finds_no_tensorflow(tmp_path: Path) -> None:
    """A PyTorch image has no TensorFlow, so its toolkit imports none, even where this
    environment has one; what importing it would set (``TF2_BEHAVIOR``, ...) reaches no rank,
    as in the fast mode. The ranks themselves still see this environment's packages."""
    code = tmp_path / "code"
    code.mkdir()
    write(
        code / "train.py",
        "import importlib.util, os\nfrom mpi4py import MPI\n"
        "set_by_tf = sorted(k for k in ('TF2_BEHAVIOR', 'KMP_INIT_AT_FORK') if k in os.environ)\n"
        "found = importlib.util.find_spec('tensorflow') is not None\n"
        "print('seen', MPI.COMM_WORLD.rank, set_by_tf, found, flush=True)\n",
    )
    fast = _submit(tmp_path, code, "train.py", False)
    exact = _submit(tmp_path, code, "train.py", True)
    assert (fast.returncode, exact.returncode) == (0, 0), exact.stderr
    assert (
        _said(fast.stdout)
        == _said(exact.stdout)
        == {rank: sorted(["seen", str(rank), "[]", "True"]) for rank in range(4)}
    )
    said = "Exceptions not imported for SageMaker TF as Tensorflow is not installed."
    assert said in exact.stderr
