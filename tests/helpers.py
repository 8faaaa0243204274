"""Helpers shared by the tests: paths, a clean environment, the CLI as a subprocess."""

from __future__ import annotations

import io
import json
import os
import re
import select
import socket
import subprocess
import sys
import tarfile
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests import warm_sdk

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
NETGUARD = Path(__file__).resolve().parent / "netguard"
GOLDEN = Path(__file__).resolve().parent / "golden"

ROLE = "arn:aws:iam::123456789012:role/x"
#: The fake credentials of :class:`MotoServer`: no output may contain them.
SECRETS = ("testing-secret-do-not-print", "testing-AKIDEXAMPLE")
#: The source dir of the packaged ``demo`` entry point.
DEMO_FILES = [
    "broadcast.py",
    "demo.py",
    "gather_reduce_broadcast.py",
    "point_to_point.py",
    "smmpi_runtime.py",
]


def path_without(folder: Path, *names: str) -> str:
    """A PATH of the venv's bin/ and ``folder``, which links to every program of this
    machine's bin and sbin folders but ``names`` (as on a machine without them)."""
    folder.mkdir()
    for place in ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"):
        for program in sorted(Path(place).iterdir()) if Path(place).is_dir() else []:
            link = folder / program.name
            if program.name not in names and not link.is_symlink():
                link.symlink_to(program)
    return f"{BIN}{os.pathsep}{folder}"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def base_env(tmp_path: Path) -> dict[str, str]:
    """An environment with no real AWS credentials or config, MPI allowed as root. The one
    setting kept is ``SMMPI_ISOLATION``, so the whole suite can run in either local mode; the
    run's kept SDK is added (tests/warm_sdk.py)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "SMMPI_"))}
    if "SMMPI_ISOLATION" in os.environ:  # `SMMPI_ISOLATION=processes make test`: the fallback
        env["SMMPI_ISOLATION"] = os.environ["SMMPI_ISOLATION"]
    env.update(
        PATH=f"{BIN}{os.pathsep}{env.get('PATH', '')}",
        OMPI_ALLOW_RUN_AS_ROOT="1",
        OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
        SAGEMAKER_SUPPRESS_V2_WARNING="1",
        SMMPI_CONFIG=str(tmp_path / "smmpi-config.json"),
        HOME=str(tmp_path / "home"),
        AWS_CONFIG_FILE=str(tmp_path / "no-aws-config"),
        AWS_SHARED_CREDENTIALS_FILE=str(tmp_path / "no-aws-credentials"),
        AWS_EC2_METADATA_DISABLED="true",
        PYTHONUNBUFFERED="1",
        **warm_sdk.env(),  # the run's kept SDK (tests/warm_sdk.py)
    )
    if stubs := os.environ.get("SMMPI_CHECK_TIER_STUBS"):  # `make check`: tests/check_tier.py
        env.update(PATH=f"{stubs}{os.pathsep}{env['PATH']}", SMMPI_MPIRUN=f"{stubs}/mpirun")
    (tmp_path / "home").mkdir(exist_ok=True)
    return env


class MotoServer:
    def __init__(self, url: str) -> None:
        self.url = url

    def aws_env(self, region: str = "us-west-2") -> dict[str, str]:
        """Variables that point boto3 (and so the SDK) at this server, with fake credentials."""
        return {
            "AWS_ENDPOINT_URL": self.url,
            "AWS_ACCESS_KEY_ID": "testing-AKIDEXAMPLE",
            "AWS_SECRET_ACCESS_KEY": "testing-secret-do-not-print",
            "AWS_DEFAULT_REGION": region,
            "AWS_REGION": region,
        }

    def reset(self) -> None:
        req = urllib.request.Request(f"{self.url}/moto-api/reset", method="POST")
        urllib.request.urlopen(req, timeout=10).read()

    def boto3_client(self, service: str, region: str = "us-west-2"):  # type: ignore[no-untyped-def]
        import boto3

        return boto3.client(
            service,
            endpoint_url=self.url,
            region_name=region,
            aws_access_key_id="testing-AKIDEXAMPLE",
            aws_secret_access_key="testing-secret-do-not-print",
        )


def smmpi(
    args: list[str],
    env: dict[str, str],
    cwd: Path | None = None,
    timeout: float = 120,
) -> subprocess.CompletedProcess[str]:
    """Run the real `smmpi` CLI as a subprocess."""
    return subprocess.run(
        [str(BIN / "smmpi"), *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def processes_with(marker: str) -> list[str]:
    """Command lines of live processes containing ``marker`` (for orphan checks)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = (entry / "stat").read_text().split(") ", 1)[1].split()[0]
        except OSError:
            continue
        if marker in cmd and state != "Z":
            found.append(cmd)
    return found


def processes_left(marker: str, grace: float = 10.0) -> list[str]:
    """``processes_with(marker)`` once they had ``grace`` s to be reaped (a deadline, not a
    timing check: a loaded machine can be slow to reap a killed process)."""
    deadline = time.monotonic() + grace
    while (found := processes_with(marker)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return found


def run_checked(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """The CLI as a subprocess, asserting that no output shows the fake credentials."""
    result = smmpi(args, env)
    for secret in SECRETS:
        assert secret not in result.stdout and secret not in result.stderr
    return result


def training_jobs(moto: MotoServer) -> list[str]:
    client = moto.boto3_client("sagemaker")
    return [j["TrainingJobName"] for j in client.list_training_jobs()["TrainingJobSummaries"]]


def s3_state(moto: MotoServer) -> dict[str, list[str]]:
    s3 = moto.boto3_client("s3")
    return {
        b["Name"]: [o["Key"] for o in s3.list_objects_v2(Bucket=b["Name"]).get("Contents", [])]
        for b in s3.list_buckets()["Buckets"]
    }


def tar_gz(files: dict[str, bytes], links: dict[str, str] | None = None) -> bytes:
    """A .tar.gz of ``files`` (name -> bytes) and symbolic ``links`` (name -> target), built by
    hand: a code package as a client (or an attacker) may send it."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w:gz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        for name, target in (links or {}).items():
            info = tarfile.TarInfo(name)
            info.type, info.linkname = tarfile.SYMTYPE, target
            tar.addfile(info)
    return raw.getvalue()


def tar_members(moto: MotoServer, bucket: str, key: str) -> list[str]:
    body = moto.boto3_client("s3").get_object(Bucket=bucket, Key=key)["Body"].read()
    with tarfile.open(fileobj=io.BytesIO(body), mode="r:gz") as tar:
        return sorted(tar.getnames())


def normalise(data: Any) -> Any:
    """Replace generated job names (smmpi-ENTRY-date) and upload ids with fixed markers."""
    text = json.dumps(data, indent=2, sort_keys=True)
    text = re.sub(r"smmpi-([a-z0-9-]+?)-\d{4}(-\d{2}){5}-\d{3}", r"smmpi-\1-GOLDEN", text)
    text = re.sub(r"smmpi-([a-z0-9-]+?)-\d{14}\b", r"smmpi-\1-GOLDEN", text)  # ModelTrainer's
    text = re.sub(r"/source/[0-9a-f]{8}/sourcedir", "/source/UPLOAD-ID/sourcedir", text)
    return json.loads(text)


def check_golden(name: str, data: Any) -> None:
    """``data`` equals tests/golden/NAME; ``SMMPI_UPDATE_GOLDEN=1`` rewrites the file instead."""
    path = GOLDEN / name
    data = normalise(data)
    if os.environ.get("SMMPI_UPDATE_GOLDEN"):
        path.parent.mkdir(exist_ok=True)
        path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    assert path.exists(), f"missing {path}; create it with SMMPI_UPDATE_GOLDEN=1"
    expected = json.loads(path.read_text())
    assert data == expected, f"{path} differs; if intended, rewrite it with SMMPI_UPDATE_GOLDEN=1"


def make_bucket(moto: MotoServer, name: str, region: str = "us-west-2") -> None:
    """A bucket at the moto server, as `smmpi infra deploy` (or the user) would have made it."""
    moto.boto3_client("s3", region).create_bucket(
        Bucket=name, CreateBucketConfiguration={"LocationConstraint": region}
    )


def write(path: Path, text: str) -> Path:
    """Write a small test program or file, and give its path back."""
    path.write_text(text, encoding="utf-8")
    return path


def no_run_dirs(tmp: Path) -> bool:
    """No ``smmpi-run-*`` folder is left in ``tmp`` (a run's private TMPDIR)."""
    return not any(tmp.glob("smmpi-run-*"))


def until_ready(proc: subprocess.Popen[str], ranks: int) -> None:
    """Read a run's stdout until ``ranks`` lines said "ready" (fails if it ends first)."""
    assert proc.stdout is not None
    ready = 0
    for line in proc.stdout:
        ready += "ready" in line
        if ready == ranks:
            break
    assert ready == ranks, proc.communicate()


def wait_until(found: Callable[[], bool], proc: subprocess.Popen[str], what: str) -> None:
    """Poll ``found`` until it holds (within 240 s), failing if ``proc`` ends before."""
    deadline = time.monotonic() + 240
    while not found():
        assert proc.poll() is None, f"smmpi ended before {what}: {proc.communicate()}"
        assert time.monotonic() < deadline, f"no {what} within the deadline"
        time.sleep(0.005)


class PipeLines:
    """Whole lines from a child's pipe as they come, with no buffer that ``select`` cannot see.

    ``select`` on a ``Popen`` pipe and then ``readline`` loses lines: one read can take two
    lines into the file object's buffer, and ``select`` on the descriptor then waits for bytes
    that already came.
    """

    def __init__(self, proc: subprocess.Popen[Any]) -> None:
        assert proc.stdout is not None
        self.proc, self.fd, self.rest = proc, proc.stdout.fileno(), b""

    def next_lines(self, wait: float = 0.1) -> list[str]:
        """The lines complete now (waiting up to ``wait`` for more); [] at the end too."""
        if select.select([self.fd], [], [], wait)[0]:
            chunk = os.read(self.fd, 65536)
            self.rest += chunk if chunk else b"\n" if self.rest else b""
        *done, self.rest = self.rest.split(b"\n")
        return [line.decode(errors="replace") for line in done]

    def until(self, count: int, marker: str, deadline: float, why: Any = "") -> list[str]:
        """Lines up to the ``count``-th with ``marker`` in it; fails at ``deadline``."""
        lines: list[str] = []
        while sum(marker in ln for ln in lines) < count:
            alive = self.proc.poll() is None and time.monotonic() < deadline
            assert alive, "".join(f"{ln}\n" for ln in lines) + (why() if callable(why) else why)
            lines += self.next_lines()
        return lines
