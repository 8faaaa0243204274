"""The local runner: a request run here as N emulated hosts (:func:`.job.run`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from smmpi.runners.base import RequestRunner as Runner
from smmpi.runners.base import RunOptions
from smmpi.runners.local.job import run
from smmpi.runners.local.records import LocalJob

if TYPE_CHECKING:
    from smmpi.aws.types import Request


class LocalRunner:
    """:class:`~smmpi.runners.base.Runner` that plays SageMaker's part on this machine."""

    def run(self, request: Request, source: bytes, options: RunOptions) -> LocalJob:
        return run(request, source, options)


if TYPE_CHECKING:
    _conforms: type[Runner] = LocalRunner
