"""A real ``smmpi serve`` process for the tests, and what they need to talk to it."""

from __future__ import annotations

import functools
import io
import json
import os
import signal
import subprocess
import tarfile
import threading
import time
from pathlib import Path
from typing import Any

from tests import warm_sdk
from tests.helpers import BIN, DEMO_FILES, ROOT, tar_gz

REGION = "us-west-2"
ROLE = "arn:aws:iam::123456789012:role/serve-tests"


class ServeProcess:
    """``smmpi serve --port 0`` as a subprocess: its export lines, and every line it printed."""

    def __init__(self, state: Path, env: dict[str, str], *args: str) -> None:
        self.state, self.base_env = state, env
        self.proc = subprocess.Popen(
            [str(BIN / "smmpi"), "serve", "--port", "0", "--state", str(state), *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=env,
            text=True,
        )
        self.lines: list[str] = []
        self.exports: dict[str, str] = {}
        ready = threading.Event()

        def read() -> None:
            assert self.proc.stdout is not None
            for line in self.proc.stdout:
                self.lines.append(line.rstrip("\n"))
                if line.startswith("export "):
                    name, _, value = line[7:].strip().partition("=")
                    self.exports[name] = value
                if line.startswith("smmpi serve: listening on"):  # not the warning
                    ready.set()
            ready.set()

        threading.Thread(target=read, daemon=True).start()
        if not ready.wait(60) or self.proc.poll() is not None:
            self.proc.kill()
            raise RuntimeError("smmpi serve did not start:\n" + "\n".join(self.lines))

    @property
    def url(self) -> str:
        return self.exports["AWS_ENDPOINT_URL"]

    @property
    def env(self) -> dict[str, str]:
        """The caller's environment with serve's exports (a client's, as the README says)."""
        return {**self.base_env, **self.exports, "AWS_DEFAULT_REGION": REGION}

    def client(self, service: str, **keys: str) -> Any:
        import boto3

        return boto3.client(  # type: ignore[call-overload]
            service,
            endpoint_url=self.url,
            region_name=REGION,
            aws_access_key_id=keys.get("access", self.exports["AWS_ACCESS_KEY_ID"]),
            aws_secret_access_key=keys.get("secret", self.exports["AWS_SECRET_ACCESS_KEY"]),
        )

    def stop(self, sig: int = signal.SIGTERM, wait: float = 120) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        return self.proc.wait(timeout=wait)

    def wait_for(self, text: str, timeout: float = 120) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for line in list(self.lines):
                if text in line:
                    return line
            time.sleep(0.05)
        raise AssertionError(f"{text!r} not printed:\n" + "\n".join(self.lines[-30:]))


def demo_source() -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name in DEMO_FILES:
            tar.add(ROOT / "entry_points" / name, arcname=name)
    return buf.getvalue()


def script_source(text: str, name: str = "train.py") -> bytes:
    return tar_gz({name: text.encode()})


_TEMPLATE_NAME, _TEMPLATE_BUCKET = "smmpi-template-job", "smmpi-template-bucket"


@functools.lru_cache(maxsize=32)
def _dry_run(home: str, args: tuple[str, ...]) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")} | {"HOME": home}
    env |= warm_sdk.env()  # the run's kept SDK (tests/warm_sdk.py)
    out = subprocess.run(
        [str(BIN / "smmpi"), "submit", "demo", "--dry-run", "--json", "--bucket", _TEMPLATE_BUCKET,
         "--role", ROLE, "--region", REGION, "--job-name", _TEMPLATE_NAME, *args],
        env=env, capture_output=True, text=True,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    return json.dumps(json.loads(out.stdout)["request"])


def dry_run_request(env: dict[str, str], name: str, bucket: str, *args: str) -> dict[str, Any]:
    """The request ``smmpi submit --dry-run --json`` builds (what ``submit`` would send),
    for job ``name`` and ``bucket`` (one dry run per set of flags, renamed for each job)."""
    if "--instances" not in args:
        args = ("--instances", "1", "--ppn", "2", *args)
    text = _dry_run(env["HOME"], tuple(args))
    request: dict[str, Any] = json.loads(
        text.replace(_TEMPLATE_NAME, name).replace(_TEMPLATE_BUCKET, bucket)
    )
    return request


def make_bucket(serve: ServeProcess, bucket: str) -> None:
    serve.client("s3").create_bucket(
        Bucket=bucket, CreateBucketConfiguration={"LocationConstraint": REGION}
    )


#: The trust policy of a SageMaker execution role.
SAGEMAKER_TRUST = {
    "Version": "2012-10-17",
    "Statement": [
        {
            "Effect": "Allow",
            "Principal": {"Service": "sagemaker.amazonaws.com"},
            "Action": "sts:AssumeRole",
        }
    ],
}


def make_role(serve: ServeProcess) -> None:
    """``ROLE`` in serve's IAM, trusting SageMaker, as a user's execution role exists in theirs."""
    iam = serve.client("iam")
    try:
        iam.create_role(
            RoleName=ROLE.rpartition("/")[2], AssumeRolePolicyDocument=json.dumps(SAGEMAKER_TRUST)
        )
    except iam.exceptions.EntityAlreadyExistsException:
        pass


def put_source(serve: ServeProcess, request: dict[str, Any], source: bytes) -> None:
    uri = json.loads(request["HyperParameters"]["sagemaker_submit_directory"])
    bucket, _, key = uri[5:].partition("/")
    serve.client("s3").put_object(Bucket=bucket, Key=key, Body=source)


def wait_end(serve: ServeProcess, name: str, timeout: float = 180) -> dict[str, Any]:
    sm = serve.client("sagemaker")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        desc: dict[str, Any] = sm.describe_training_job(TrainingJobName=name)
        if desc["TrainingJobStatus"] in ("Completed", "Failed", "Stopped"):
            return desc
        time.sleep(0.2)
    raise AssertionError(f"{name} did not end in {timeout} s")


def log_lines(serve: ServeProcess, name: str) -> dict[str, list[str]]:
    logs = serve.client("logs")
    group = "/aws/sagemaker/TrainingJobs"
    try:
        streams = logs.describe_log_streams(logGroupName=group, logStreamNamePrefix=f"{name}/")
    except logs.exceptions.ResourceNotFoundException:  # no job has logged yet
        return {}
    found: dict[str, list[str]] = {}
    for stream in streams["logStreams"]:
        events = logs.get_log_events(
            logGroupName=group, logStreamName=stream["logStreamName"], startFromHead=True
        )["events"]
        found[stream["logStreamName"]] = [e["message"] for e in events]
    return found


def processes_under(marker: str) -> list[str]:
    """Command lines of live processes that mention ``marker``."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if marker in cmd:
            found.append(f"{pid}: {cmd}")
    return found
