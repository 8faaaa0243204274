"""A code dir's requirements.txt: reported, installed only into the job's folder when asked."""

from __future__ import annotations

import http.server
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from smmpi.runners.local import installs
from tests.helpers import processes_left, smmpi

TRAIN = "from mpi4py import MPI\nprint('ran on rank', MPI.COMM_WORLD.Get_rank())\n"


def _tiny_wheel(folder: Path) -> Path:
    """A minimal wheel built by hand, so pip installs it with no index and no build step."""
    import base64
    import hashlib
    import zipfile

    files = {
        "smmpi_tinypkg.py": "ANSWER = 42\n",
        "smmpi_tinypkg-1.0.dist-info/METADATA": (
            "Metadata-Version: 2.1\nName: smmpi-tinypkg\nVersion: 1.0\n"
        ),
        "smmpi_tinypkg-1.0.dist-info/WHEEL": (
            "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        ),
    }
    record = []
    for name, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=")
        record.append(f"{name},sha256={digest.decode()},{len(text.encode())}")
    record.append("smmpi_tinypkg-1.0.dist-info/RECORD,,")
    files["smmpi_tinypkg-1.0.dist-info/RECORD"] = "\n".join(record) + "\n"
    wheel = folder / "smmpi_tinypkg-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        for name, text in files.items():
            zf.writestr(name, text)
    return wheel


def test_requirements_reported_and_installed_only_when_asked(
    local_env: dict[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from smmpi.spec import MPIJob

    src = tmp_path / "src"
    (src / "wheels").mkdir(parents=True)
    _tiny_wheel(src / "wheels")  # offline: pip finds it in the code dir, as in the container
    (src / "requirements.txt").write_text("--no-index\n--find-links wheels\nsmmpi-tinypkg\n")
    (src / "uses_dep.py").write_text(
        "from mpi4py import MPI\nimport smmpi_tinypkg\nassert smmpi_tinypkg.ANSWER == 42\n"
        "print('dependency ok on rank', MPI.COMM_WORLD.Get_rank())\n"
    )
    job = MPIJob(entry=str(src / "uses_dep.py"), source_dir=str(src), instances=1, ppn=2)

    plain = job.submit(local=True)
    err = capsys.readouterr().err
    assert "requirements.txt asks for" in err and "not installed here" in err
    assert plain.status == "Failed"
    assert "ModuleNotFoundError: No module named 'smmpi_tinypkg'" in plain.record["FailureReason"]

    installed = job.submit(local=True, install_requirements=True)
    out, err = capsys.readouterr()
    assert installed.status == "Completed", installed.record.get("FailureReason")
    assert out.count("dependency ok on rank") == 2
    assert (installed.folder / "site-packages" / "smmpi_tinypkg.py").is_file()

    cli = smmpi(
        [
            "submit",
            str(src / "uses_dep.py"),
            "--source-dir",
            str(src),
            "-N",
            "2",
            "-n",
            "1",
            "--local",
            "--install-requirements",
            "--job-name",
            "with-deps",
        ],
        local_env,
    )
    assert cli.returncode == 0, cli.stderr
    assert cli.stdout.count("dependency ok on rank") == 2


def _submit(src: Path, *extra: str) -> list[str]:
    args = ["submit", str(src / "train.py"), "--source-dir", str(src), "-N", "2", "-n", "1"]
    return [*args, "--local", "--job-name", "reqs", *extra]


def _code(tmp_path: Path, files: dict[str, str | bytes]) -> Path:
    src = tmp_path / "src"
    src.mkdir()
    (src / "train.py").write_text(TRAIN)
    for name, content in files.items():
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            (src / name).write_bytes(content)
        else:
            (src / name).write_text(content)
    return src


def _nothing_created(env: dict[str, str]) -> None:
    jobs = Path(env["SMMPI_LOCAL_JOBS"])
    assert not jobs.exists() or list(jobs.iterdir()) == []


@pytest.mark.parametrize(
    ("files", "line"),
    [
        (
            {"requirements.txt": "six\n-r /dev/zero\n"},
            "invalid -r in requirements.txt: '/dev/zero'; allowed: a regular file smmpi can "
            "use (this is a character device)",
        ),
        (
            {"requirements.txt": "-r extra/dev.txt\n", "extra/dev.txt": "--constraint=/dev/zero\n"},
            "invalid --constraint in extra/dev.txt: '/dev/zero'; allowed: a regular file smmpi "
            "can use (this is a character device)",
        ),
        (
            {"requirements.txt": "-rmissing.txt\n"},
            "invalid -r in requirements.txt: 'missing.txt'; allowed: a regular file smmpi can "
            "use (no such file in the code dir)",
        ),
    ],
)
def test_a_special_file_in_a_requirements_file_is_refused_before_anything(
    local_env: dict[str, str], tmp_path: Path, files: dict[str, str | bytes], line: str
) -> None:
    """``-r /dev/zero`` grew pip without end: every file the ``-r``/``-c`` lines name,
    recursively, is a regular file under a size cap, or one line and exit 2."""
    src = _code(tmp_path, files)
    done = smmpi(_submit(src, "--install-requirements"), local_env)
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [f"smmpi: {line}"]
    _nothing_created(local_env)


@pytest.mark.parametrize("install", [True, False])
def test_a_binary_requirements_txt_is_one_line_naming_it(
    local_env: dict[str, str], tmp_path: Path, install: bool
) -> None:
    src = _code(tmp_path, {"requirements.txt": b"\x89PNG\r\n\x1a\n\x00\x00"})
    extra = ["--install-requirements"] if install else []
    done = smmpi(_submit(src, *extra), local_env)
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [
        "smmpi: invalid requirements file: 'requirements.txt'; allowed: UTF-8 text "
        "(byte 0x89 at offset 0 is not UTF-8)"
    ]
    _nothing_created(local_env)


def test_many_requirements_give_a_short_progress_line(
    local_env: dict[str, str], tmp_path: Path
) -> None:
    names = [f"package-number-{i}==1.0" for i in range(200_000)]
    src = _code(tmp_path, {"requirements.txt": "\n".join(names) + "\n"})
    done = smmpi(_submit(src), local_env, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    said = [ln for ln in done.stderr.splitlines() if "requirements.txt" in ln]
    assert said == [
        "smmpi: requirements.txt asks for 200000 requirements: package-number-0==1.0, "
        "package-number-1==1.0, package-number-2==1.0, … and 199997 more: SageMaker's container "
        "pip-installs it; not installed here (use --install-requirements to install it into "
        "this job's own folder)"
    ]


@pytest.fixture
def silent_index() -> Iterator[tuple[str, list[socket.socket]]]:
    """A package index that accepts every connection and never answers."""
    server = socket.create_server(("127.0.0.1", 0))
    accepted: list[socket.socket] = []

    def accept() -> None:
        while True:
            try:
                accepted.append(server.accept()[0])
            except OSError:
                return

    threading.Thread(target=accept, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.getsockname()[1]}/simple", accepted
    finally:
        server.close()
        for conn in accepted:
            conn.close()


@pytest.mark.own_mode
@pytest.mark.parametrize("isolation", ["hosts", "processes"])
def test_an_index_that_never_answers_ends_at_the_timeout(
    local_env: dict[str, str],
    tmp_path: Path,
    silent_index: tuple[str, list[socket.socket]],
    isolation: str,
) -> None:
    """pip's own waits (15 s a try, 5 retries) ran 396 s past ``--timeout 60``: the install is
    stopped when the run's --timeout ends, with the cause named, and nothing is left."""
    url, accepted = silent_index
    src = _code(tmp_path, {"requirements.txt": f"--index-url {url}\nsmmpi-never-served==1.0\n"})
    args = _submit(src, "--install-requirements", "--timeout", "20", "--isolation", isolation)
    done = smmpi(args, local_env, timeout=150)  # far less than pip's own retries would take
    assert done.returncode == 124, done.stderr
    assert done.stderr.splitlines()[-1] == (
        "smmpi: installing requirements.txt was stopped: the run's --timeout of 20 s (counted "
        "from the run's start) ended while pip was still running (a package index that does "
        "not answer, or a long build?)"
    )
    assert accepted, "pip never reached the index"
    _nothing_created(local_env)
    assert processes_left(local_env["SMMPI_LOCAL_JOBS"]) == []


class _Endless(http.server.BaseHTTPRequestHandler):
    """A requirements file without end (comment lines, 1 MiB at a time)."""

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.end_headers()
        chunk = b"#" * ((1 << 20) - 1) + b"\n"
        try:
            while True:
                self.wfile.write(chunk)
        except OSError:
            return

    def log_message(self, *args: object) -> None:
        pass


def test_an_install_that_grows_without_end_is_stopped_by_its_memory_cap(
    local_env: dict[str, str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from smmpi.errors import SmmpiError
    from smmpi.spec import MPIJob

    monkeypatch.setattr(installs, "MEMORY_CAP", 512 * 1024 * 1024)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Endless)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/endless.txt"
        src = _code(tmp_path, {"requirements.txt": f"-r {url}\n"})
        job = MPIJob(entry=str(src / "train.py"), source_dir=str(src), instances=1, ppn=1)
        with pytest.raises(SmmpiError) as err:
            job.submit(local=True, install_requirements=True, timeout=240)
    finally:
        server.shutdown()
        server.server_close()
    assert str(err.value) == (
        "installing requirements.txt failed: pip ran out of the 512 MiB of memory an install "
        "may use (MemoryError)"
    )
    _nothing_created(local_env)


def _archive(tmp_path: Path, files: dict[str, str]) -> bytes:
    from smmpi.archives import pack

    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    return pack((tmp_path / name, name) for name in files)


def test_requirements_files_are_read_as_pip_reads_them(tmp_path: Path) -> None:
    """Continuation lines joined, comments dropped; files that name each other are read once;
    a name that leaves the code dir, or a file over the cap, is refused."""
    from smmpi.bounded import FileRefused
    from smmpi.runners.local.req_files import MAX_BYTES, requirement_lines

    cycle = {
        "requirements.txt": "# pinned\nsix \\\n  ==1.16  # why\n-r more/b.txt\n",
        "more/b.txt": "-r ../requirements.txt\n",
    }
    assert requirement_lines(_archive(tmp_path / "a", cycle), True) == [
        "six   ==1.16",
        "-r more/b.txt",
    ]
    assert requirement_lines(_archive(tmp_path / "b", {"train.py": ""}), True) is None
    outside = {"requirements.txt": "-c ../../etc/constraints.txt\n"}
    with pytest.raises(FileRefused) as err:
        requirement_lines(_archive(tmp_path / "c", outside), True)
    assert str(err.value) == (
        "invalid -c in requirements.txt: '../../etc/constraints.txt'; allowed: a regular file "
        "smmpi can use (outside the code dir)"
    )
    big = {"requirements.txt": "#" * (MAX_BYTES + (1 << 20)) + "\n"}
    with pytest.raises(FileRefused) as err:
        requirement_lines(_archive(tmp_path / "d", big), False)
    assert str(err.value) == (
        "invalid requirements file: 'requirements.txt'; allowed: a regular file smmpi can use "
        "(17 MiB, over the 16 MiB limit)"
    )
