"""Hooks on a SageMaker client's calls: record an operation's parameters, and answer it here.

``provide-client-params`` sees the API parameters as the caller gave them;
``before-call`` comes after botocore validated them, and is where an answer
short-circuits the HTTP request. So only calls that passed validation are
recorded. One hook serves the dry run (record CreateTrainingJob, answer it),
``submit`` (record it, let it through) and local mode (answer it with a local run).
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
    """Record the parameters of every valid ``operation`` call in the yielded list while inside.

    With ``answer``, the call does not reach the service: ``answer(params)``
    is its parsed response (it may raise a botocore ``ClientError``).
    """
    events = client.meta.events
    seen: list[dict[str, Any]] = []
    pending: list[dict[str, Any]] = []
    uid = f"smmpi-{operation}-{next(_ids)}"
    params_event = f"provide-client-params.sagemaker.{operation}"
    call_event = f"before-call.sagemaker.{operation}"

    def given(params: dict[str, Any], **kwargs: Any) -> None:
        pending[:] = [copy.deepcopy(params)]

    def validated(**kwargs: Any) -> tuple[Any, dict[str, Any]] | None:
        seen.append(pending.pop())
        if answer is None:
            return None  # the call goes on to the service
        from botocore.awsrequest import AWSResponse, HTTPHeaders

        return AWSResponse("", 200, HTTPHeaders(), None), answer(seen[-1])

    events.register(params_event, given, unique_id=uid + "-given")
    events.register(call_event, validated, unique_id=uid + "-validated")
    try:
        yield seen
    finally:
        events.unregister(params_event, unique_id=uid + "-given")
        events.unregister(call_event, unique_id=uid + "-validated")
