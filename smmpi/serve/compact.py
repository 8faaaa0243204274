"""Which of the journal's requests a later delete undid, so that a restart need not replay them.

Each kept request concerns resources, named by its parameters: an IAM role, user,
group or instance profile (``RoleName``, ``UserName``, ``GroupName``,
``InstanceProfileName``), a CloudFormation stack (``StackName``, or the name in a
stack's ARN), a CloudWatch Logs group (``logGroupName``) or one of its streams.
A resource's life runs from the request that created it to the one that deleted
it (both answered 2xx, as every kept request was). Every request made within
such a life and concerning that resource is undone by the delete: replayed, it
would make what the delete removed, so it is dropped, the create and the delete
with it. A log stream's requests lie within its group's life too, and a stack's
resources go with its delete.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from urllib.parse import parse_qs

from smmpi.serve.calls import Call, operation

#: (service, kind): (parameter naming it, the operation creating it, the one deleting it)
KINDS = {
    ("iam", "role"): ("RoleName", "CreateRole", "DeleteRole"),
    ("iam", "user"): ("UserName", "CreateUser", "DeleteUser"),
    ("iam", "group"): ("GroupName", "CreateGroup", "DeleteGroup"),
    ("iam", "profile"): ("InstanceProfileName", "CreateInstanceProfile", "DeleteInstanceProfile"),
    ("cloudformation", "stack"): ("StackName", "CreateStack", "DeleteStack"),
    ("logs", "group"): ("logGroupName", "CreateLogGroup", "DeleteLogGroup"),
}
_STREAM = ("logs", "stream")
Key = tuple[str, str, str]


def _params(call: Call) -> dict[str, str]:
    """A request's parameters: the JSON body's strings (Logs), else the query's and form's."""
    if call.service == "logs":
        try:
            found = json.loads(call.body or b"{}")
        except (ValueError, UnicodeDecodeError, RecursionError):
            return {}
        return (
            {k: v for k, v in found.items() if isinstance(v, str)}
            if isinstance(found, dict)
            else {}
        )
    pairs = parse_qs(call.query)
    if call.content_type.startswith("application/x-www-form-urlencoded"):
        pairs.update(parse_qs(call.body.decode("utf-8", "replace")))
    return {k: v[0] for k, v in pairs.items() if v}


def _stack_name(value: str) -> str:
    """A stack's name, given its name or its ARN (``arn:...:stack/NAME/ID``)."""
    if value.startswith("arn:") and ":stack/" in value:
        return value.split(":stack/", 1)[1].split("/", 1)[0]
    return value


def concerns(call: Call) -> set[Key]:
    """The resources a request names."""
    params = _params(call)
    found: set[Key] = set()
    for (service, kind), (name, _, _) in KINDS.items():
        if service == call.service and params.get(name):
            value = params[name]
            found.add((service, kind, _stack_name(value) if kind == "stack" else value))
    group, stream = params.get("logGroupName"), params.get("logStreamName")
    if call.service == "logs" and group and stream:
        found.add((*_STREAM, f"{group}\0{stream}"))
    return found


def _made_or_removed(call: Call, op: str, keys: set[Key]) -> tuple[Key | None, Key | None]:
    """The resource this request created, and the one it deleted (if any)."""
    for key in keys:
        kind = (key[0], key[1])
        if kind == _STREAM:
            made, removed = "CreateLogStream", "DeleteLogStream"
        else:
            made, removed = KINDS[kind][1], KINDS[kind][2]
        if op == made:
            return key, None
        if op == removed:
            return None, key
    return None, None


def _lives(calls: list[Call], keys: list[set[Key]]) -> Iterable[tuple[Key, int, int]]:
    """(resource, index of its create, index of its delete) for every life that ended."""
    born: dict[Key, int] = {}
    for index, call in enumerate(calls):
        made, removed = _made_or_removed(call, operation(call), keys[index])
        if made is not None:
            born[made] = index
        if removed is not None and removed in born:
            yield removed, born.pop(removed), index


def undone(calls: list[Call]) -> set[int]:
    """Indexes of the requests that a later delete undid."""
    keys = [concerns(call) for call in calls]
    dropped: set[int] = set()
    for key, start, end in _lives(calls, keys):
        group = key[1] == "group" and key[0] == "logs"
        for index in range(start, end + 1):
            mine = key in keys[index] or (
                group
                and any(k[:2] == _STREAM and k[2].split("\0")[0] == key[2] for k in keys[index])
            )
            if mine:
                dropped.add(index)
    return dropped
