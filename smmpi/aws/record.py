"""Hooks on a SageMaker client's calls: record an operation's parameters, and answer it here.

``provide-client-params`` sees the API parameters after botocore validated
them; ``before-call`` is where an answer short-circuits the HTTP request. One
hook serves the dry run (record CreateTrainingJob, answer it), ``submit``
(record it, let it through) and local mode (answer it with a local run).
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

Answer = Callable[[dict[str, Any]], dict[str, Any]]
_ids = itertools.count()


@contextmanager
def hooked(
    client: Any, operation: str, answer: Answer | None = None
) -> Iterator[list[dict[str, Any]]]:
    """Record every ``operation`` call's parameters in the yielded list while inside.

    With ``answer``, the call does not reach the service: ``answer(params)``
    is its parsed response (it may raise a botocore ``ClientError``).
    """
    events = client.meta.events
    seen: list[dict[str, Any]] = []
    uid = f"smmpi-{operation}-{next(_ids)}"
    params_event = f"provide-client-params.sagemaker.{operation}"
    call_event = f"before-call.sagemaker.{operation}"

    def record(params: dict[str, Any], **kwargs: Any) -> None:
        seen.append(copy.deepcopy(params))

    def respond(**kwargs: Any) -> tuple[Any, dict[str, Any]]:
        from botocore.awsrequest import AWSResponse, HTTPHeaders

        assert answer is not None
        return AWSResponse("", 200, HTTPHeaders(), None), answer(seen[-1])

    events.register(params_event, record, unique_id=uid + "-record")
    if answer is not None:
        events.register(call_event, respond, unique_id=uid + "-answer")
    try:
        yield seen
    finally:
        events.unregister(params_event, unique_id=uid + "-record")
        if answer is not None:
            events.unregister(call_event, unique_id=uid + "-answer")
