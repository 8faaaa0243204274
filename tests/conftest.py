"""Shared fixtures: a real moto server over HTTP, the smmpi CLI as a subprocess, process counts."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def base_env(tmp_path: Path) -> dict[str, str]:
    """An environment with no real AWS credentials or config, MPI allowed as root."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "SMMPI_"))}
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
    )
    (tmp_path / "home").mkdir(exist_ok=True)
    return env


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return base_env(tmp_path)


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


@pytest.fixture(scope="session")
def moto_server_session() -> Iterator[MotoServer]:
    port = _free_port()
    proc = subprocess.Popen(
        [str(BIN / "moto_server"), "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        try:
            urllib.request.urlopen(f"{url}/moto-api/", timeout=1).read()
            break
        except OSError:
            if time.monotonic() > deadline or proc.poll() is not None:
                proc.kill()
                raise RuntimeError("moto server did not start") from None
            time.sleep(0.2)
    try:
        yield MotoServer(url)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


@pytest.fixture
def moto_server(moto_server_session: MotoServer) -> Iterator[MotoServer]:
    """The session's moto server, emptied before each test."""
    moto_server_session.reset()
    yield moto_server_session


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
