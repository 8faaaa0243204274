"""What serve gives an ``@remote`` job's instances: a key of the job's own and an S3 endpoint.

As a job starts, :meth:`RemoteAccess.open` mints its key (:mod:`.job_keys`) and opens its
endpoint (:mod:`.job_endpoint`); the worker gets both through its environment, never a
file: ``WORKER_ENV`` holds the instances' variables (``AWS_ENDPOINT_URL_S3`` on their own
loopback, the key, the region) and ``WORKER_RELAY`` the relay's path. Any other job gets
nothing. :meth:`close`, as the job ends, forgets the key and closes the endpoint.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from smmpi.platform.instance_endpoint import VARIABLE, endpoint_url
from smmpi.serve.job_endpoint import JobEndpoint, Serve
from smmpi.serve.job_keys import JobKeys, remote_folder
from smmpi.serve.worker import WORKER_ENV, WORKER_RELAY

RELAY = "endpoint.sock"


class RemoteAccess:
    """The keys and endpoints of the ``@remote`` jobs running now."""

    def __init__(self, keys: JobKeys, serve: Serve) -> None:
        self.keys, self.serve = keys, serve
        self.endpoints: dict[str, JobEndpoint] = {}
        self.lock = threading.Lock()

    def open(
        self, name: str, request: Mapping[str, Any], work: Path, region: str
    ) -> dict[str, str]:
        """The worker's variables for job ``name`` (none for a job that is no ``@remote``)."""
        folder = remote_folder(request)
        if folder is None:
            return {}
        instances = int((request.get("ResourceConfig") or {}).get("InstanceCount") or 1)
        endpoint = JobEndpoint(name, work / RELAY, instances, self.serve)
        with self.lock:
            self.endpoints[name] = endpoint
        minted = self.keys.mint(name, *folder)
        variables = {
            VARIABLE: endpoint_url(),
            "AWS_ACCESS_KEY_ID": minted.keys.access_key,
            "AWS_SECRET_ACCESS_KEY": minted.keys.secret_key,
            "AWS_REGION": region,
            "AWS_DEFAULT_REGION": region,
        }
        return {WORKER_ENV: json.dumps(variables), WORKER_RELAY: str(endpoint.path)}

    def close(self, name: str) -> None:
        """Job ``name`` has ended: its key signs nothing more, its endpoint answers no more."""
        self.keys.revoke(name)
        with self.lock:
            endpoint = self.endpoints.pop(name, None)
        if endpoint is not None:
            endpoint.close()
