"""``smmpi.serve.Server``: the endpoint, its state and its jobs, started and stopped as one.

>>> with Server(state="/tmp/serve-state") as server:   # an ephemeral port on 127.0.0.1
...     os.environ.update(server.env)                  # any AWS client now trains here

Stopping it stops every running job (each still uploads its artifacts and
ends ``Stopped``), then saves S3's state.
"""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any

from smmpi.serve import cloudwatch
from smmpi.serve.app import App
from smmpi.serve.calls import Call
from smmpi.serve.job_keys import JobKeys
from smmpi.serve.job_records import ACCOUNT
from smmpi.serve.jobs import JobStore
from smmpi.serve.journal import Journal, changes
from smmpi.serve.logs import JobLogs
from smmpi.serve.remote_access import RemoteAccess
from smmpi.serve.runner import JobRunner
from smmpi.serve.s3store import S3Store
from smmpi.serve.state import Keys, load_keys, read_json, state_folder, write_json

DEFAULT_REGION = "us-west-2"
SDK_CONFIG = "sagemaker-config.yaml"
RUNNING = "server.json"  # the running serve's address, for `smmpi serve --env`


def _untracked_new(cls: type, *args: Any, **kwargs: Any) -> Any:
    return object.__new__(cls)


def _fresh_moto() -> None:
    """moto's backends are this process's: empty them, so only the state folder fills them.

    moto also keeps every model object it ever made (every S3 object, log event, role...,
    deleted or replaced ones included) in a list per class, for its dashboard, which serve
    does not serve: that list would make serve's memory grow with every request. In serve's
    process, moto's objects live as long as moto's backends hold them, and no longer.
    """
    from moto.core.common_models import BaseModel
    from moto.moto_api._internal.models import moto_api_backend

    BaseModel.__new__ = staticmethod(_untracked_new)  # type: ignore[assignment,method-assign]
    moto_api_backend.reset()  # which also empties the lists


class Server:
    """SageMaker's training API, S3, Logs, STS, IAM and CloudFormation on one local port."""

    def __init__(
        self,
        state: str | Path | None = None,
        *,
        port: int = 0,
        bind: str = "127.0.0.1",
        parallel: int = 1,
        isolation: str | None = None,
        region: str = DEFAULT_REGION,
        event: Callable[[str], None] | None = None,
        exact: bool = False,
    ) -> None:
        if exact:  # where exact mode cannot run, one line (BadInput) and nothing made
            from smmpi.runners.local.exact import check

            check(isolation, 2)
        self.root = state_folder(state)
        self.port, self.bind, self.region = port, bind, region
        self.parallel, self.isolation, self.exact = parallel, isolation, exact
        self.event = event or (lambda line: None)
        self.keys: Keys = load_keys(self.root)
        self._httpd: Any = None
        self._url: str | None = None
        self._thread: threading.Thread | None = None

    def running_url(self) -> str | None:
        """The address of the serve running on this state folder, if one is."""
        path = self.root / RUNNING
        if not path.is_file():
            return None
        data = read_json(path)
        try:
            os.kill(int(data["pid"]), 0)
        except (OSError, ValueError):
            return None
        return str(data["url"])

    def use_url(self, url: str) -> None:
        """Speak of another process's serve on this state folder (``smmpi serve --env``)."""
        self._url = url

    @property
    def url(self) -> str:
        if self._url:
            return self._url
        host = "127.0.0.1" if self.bind in ("0.0.0.0", "") else self.bind
        host = f"[{host}]" if ":" in host else host  # an IPv6 address, as a URL writes it
        return f"http://{host}:{self.port}"

    @property
    def default_bucket(self) -> str:
        """The bucket the SDK's ``Session().default_bucket()`` names (serve creates it)."""
        return f"sagemaker-{self.region}-{ACCOUNT}"

    @property
    def env(self) -> dict[str, str]:
        """The variables a client needs: endpoint, region, serve's key pair, and the SDK's
        config (its default bucket, telemetry off: the SDK would ask AWS's own STS for both)."""
        return {
            "AWS_ENDPOINT_URL": self.url,
            "AWS_REGION": self.region,
            "AWS_DEFAULT_REGION": self.region,
            "AWS_ACCESS_KEY_ID": self.keys.access_key,
            "AWS_SECRET_ACCESS_KEY": self.keys.secret_key,
            "SAGEMAKER_USER_CONFIG_OVERRIDE": str(self.root / SDK_CONFIG),
        }

    def _sdk_config(self) -> None:
        modules = {"Session": {"DefaultS3Bucket": self.default_bucket}, "TelemetryOptOut": True}
        config = {"SchemaVersion": "1.0", "SageMaker": {"PythonSDK": {"Modules": modules}}}
        write_json(self.root / SDK_CONFIG, config)  # JSON is YAML
        self.s3.ensure_bucket(self.default_bucket, self.region)

    def start(self) -> Server:
        from smmpi.serve.front import make_server

        _fresh_moto()
        self.journal = Journal(self.root)
        self.s3 = S3Store(self.root)
        self.logs = JobLogs(self.root)
        self.store = JobStore(self.root)
        for line in self.store.set_aside:
            self.event(line)
        job_keys = JobKeys()  # minted for @remote jobs, answered on their own endpoints
        self.runner = JobRunner(
            self.root, self.store, self.s3, self.logs,
            parallel=self.parallel, isolation=self.isolation, event=self.event, exact=self.exact,
            access=RemoteAccess(job_keys, self._job_connection),
        )  # fmt: skip
        monitoring = functools.partial(cloudwatch.answer, self.runner.metrics)
        app = App(
            self.keys, self.runner, self._written, self.logs.job_streams, monitoring, job_keys
        )
        self.journal.compact()  # what later deletes undid is not replayed
        self.journal.replay(app.moto_app)  # IAM, CloudFormation and the clients' own logs
        self.s3.restore()
        self._sdk_config()
        self.logs.restore()
        self.runner.recover()
        for service in ("s3", "logs", "sts"):
            app.moto_app(service)  # the first request should not pay for moto's imports
        self._httpd = make_server(self.bind, self.port, app)
        self.port = self._httpd.port
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()
        write_json(self.root / RUNNING, {"url": self.url, "pid": os.getpid()})
        return self

    def _job_connection(self, conn: Any, address: Any, job: str) -> None:
        from smmpi.serve.front import serve_job_connection

        if self._httpd is None:  # serve is stopping
            conn.close()
            return
        serve_job_connection(self._httpd, conn, address, job)

    def _written(self, call: Call, status: int) -> None:
        if call.service in ("s3", "cloudformation") and call.method not in ("GET", "HEAD"):
            self.s3.sync()
        if 200 <= status < 300 and changes(call):
            self.journal.append(call)

    def stop(self) -> None:
        """Stop every job (artifacts still uploaded), stop listening, save S3."""
        from smmpi.serve.front import close_connections

        if self._httpd is None:
            return
        (self.root / RUNNING).unlink(missing_ok=True)
        self.runner.shutdown()
        self._httpd.shutdown()
        self._httpd.server_close()
        close_connections(self._httpd)
        self._httpd = None
        self.s3.sync()

    def __enter__(self) -> Server:
        return self.start()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.stop()
