"""The oracle: the real sagemaker-training toolkit, driven on host trees, answering in JSON.

Runs inside the toolkit's own venv (``.venv-toolkit``, see the Makefile), never
in smmpi's: the TensorFlow toolkit pins ``sagemaker-training<=4.8.3`` and
``numpy<1.24``, which neither smmpi's venv nor toolkit 5.1.4 can satisfy.

Input on stdin::

    {"cases": [{"id": "...", "hosts": {"algo-1": "<tree standing in for /opt/ml>", ...},
                "env": {<the container's environment at start>},
                "num_gpus": 0, "num_cpus": 8, "torch_version": "2.8.0+cpu"}],
     "watch": [{"ppn": 2, "text": "<raw mpirun --tag-output output>"}]}

For every host of every case, a forked child clears ``os.environ`` to the
given container environment, points ``SAGEMAKER_BASE_DIR`` at that host's
tree and runs the container's own entry, ``sagemaker_training.trainer.train()``,
which imports the framework toolkit named by ``SAGEMAKER_TRAINING_MODULE``
and calls its ``main()``. Everything runs as in the container up to the
moment a runner would start a process; there the child records instead:

- ``env_vars``: the mapping handed to the runner (``to_env_vars()`` plus PYTHONPATH);
- ``environ``: the framework process's whole environment at that moment
  (what mpirun inherits on algo-1, what a worker writes to /etc/environment);
- ``exported``: the variables the toolkits added or changed;
- ``runner`` and, on the master, ``command``: ``MasterRunner._create_command()``;
- on a worker, ``etc_environment``: what ``mpi._write_env_vars_to_file`` writes;
- ``pip``: the install commands the toolkit would run (``setup.py``, ``requirements.txt``).

Only what cannot run here is replaced, and nothing it computes:
- hardware probes: ``environment.num_gpus`` / ``num_cpus`` answer the instance
  type's figures (``nvidia-smi`` and the machine's core count are not the instance's);
- the framework libraries: an empty ``tensorflow`` module (only the parameter
  server path uses it) and a ``torch`` module carrying the image's ``__version__``;
- side effects: the code download (the tree already holds the code), DNS waits
  for algo-k, ``pip install`` and process launches are recorded, not performed;
  ``/etc/environment`` is written to a buffer.

``failures`` entries (``stdout``, ``stderr``, ``code``, ``classes``) are a command's
output and exit code, run through ``process.check_error`` as MasterRunner runs
mpirun; the answer is the text of the error it raises, which ``trainer.train``
writes to ``/opt/ml/output/failure``.

``watch`` entries go through ``process.watch`` (the toolkit's output tagger)
as one stream, and come back as the lines it prints. ``sleeps`` lists the
constant ``time.sleep`` calls of the MPI runners' teardown.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import os
import sys
import tempfile
import traceback
import types
from typing import Any

# Imported before forking so each child starts fast; none reads SAGEMAKER_BASE_DIR.
import boto3  # noqa: F401
import botocore  # noqa: F401
import paramiko  # noqa: F401
import psutil  # noqa: F401
import retrying  # noqa: F401
import six  # noqa: F401


def _stub_frameworks(torch_version: str | None) -> None:
    sys.modules.setdefault("tensorflow", types.ModuleType("tensorflow"))
    if torch_version:
        torch = types.ModuleType("torch")
        torch.__version__ = torch_version  # type: ignore[attr-defined]
        sys.modules["torch"] = torch


class _Recorded(Exception):
    """Raised by the runner stand-in once the state is recorded: nothing is launched."""


def _record_runner(state: dict[str, Any], runner_obj: Any, env_vars: dict[str, str]) -> None:
    from sagemaker_training import mpi

    state["runner"] = type(runner_obj).__name__
    state["env_vars"] = dict(env_vars)
    state["environ"] = dict(os.environ)
    if isinstance(runner_obj, mpi.MasterRunner):
        state["command"] = runner_obj._create_command()
        state["processes_per_host"] = runner_obj._processes_per_host
    elif isinstance(runner_obj, mpi.WorkerRunner):
        buf = io.StringIO()

        def fake_open(path: str, mode: str = "r", *a: Any, **k: Any) -> Any:
            if path != "/etc/environment":
                return open(path, mode, *a, **k)
            state["etc_environment_mode"] = mode
            return contextlib.nullcontext(buf)

        mpi.open = fake_open  # type: ignore[attr-defined]
        try:
            mpi._write_env_vars_to_file()
        finally:
            del mpi.open  # type: ignore[attr-defined]
        state["etc_environment"] = buf.getvalue()


def _patch_toolkit(state: dict[str, Any], num_gpus: int, num_cpus: int) -> None:
    from sagemaker_training import entry_point, environment, files, process, runner

    environment.num_gpus = lambda: num_gpus
    environment.num_cpus = lambda: num_cpus
    files.download_and_extract = lambda uri, path: state.setdefault("download", []).append(
        [uri, path]
    )
    entry_point._dns_lookup = lambda host: None
    try:
        from sagemaker_pytorch_container import training as pt_training

        pt_training._dns_lookup = lambda host: None
    except ImportError:
        pass

    def check_error(cmd: list[str], *args: Any, cwd: str | None = None, **kwargs: Any) -> None:
        state.setdefault("pip", []).append({"cmd": list(cmd), "cwd": cwd})

    process.check_error = check_error
    real_get = runner.get

    def get(
        identifier: Any,
        user_entry_point: Any = None,
        args: Any = None,
        env_vars: Any = None,
        extra_opts: Any = None,
    ) -> Any:
        runner_obj = real_get(identifier, user_entry_point, args, env_vars, extra_opts)
        state["args"] = list(args or [])
        _record_runner(state, runner_obj, env_vars or {})
        raise _Recorded()

    runner.get = get


def _run_host(case: dict[str, Any], host: str, root: str) -> dict[str, Any]:
    """In a forked child: the container's start on ``host``, recorded."""
    os.environ.clear()
    os.environ.update(case["env"])
    os.environ["SAGEMAKER_BASE_DIR"] = root
    state: dict[str, Any] = {}
    _stub_frameworks(case.get("torch_version"))
    _patch_toolkit(state, int(case.get("num_gpus", 0)), int(case.get("num_cpus", 1)))
    initial = dict(os.environ)
    from sagemaker_training import trainer

    try:
        trainer.train()
    except SystemExit as exc:
        state["exit"] = exc.code
    # trainer.train() reports a runner's exception as a failure and exits 1; ours is expected.
    failure = os.path.join(root, "output", "failure")
    if os.path.exists(failure):
        with open(failure) as f:
            text = f.read()
        os.remove(failure)
        if "_Recorded" not in text:
            state["error"] = text
    if "environ" in state:
        state["exported"] = {k: v for k, v in state["environ"].items() if initial.get(k) != v}
        state["removed"] = sorted(set(initial) - set(state["environ"]))
    else:
        state.setdefault("error", "the toolkit never reached a runner")
    return state


def _in_child(fn: Any, *args: Any) -> Any:
    """Run ``fn(*args)`` in a forked child; its JSON answer comes back through a temp file."""
    with tempfile.NamedTemporaryFile("r", suffix=".json") as out:
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, 1)
                os.dup2(devnull, 2)
                answer = fn(*args)
            except BaseException:
                answer = {"error": traceback.format_exc()}
                code = 1
            with open(out.name, "w") as f:
                json.dump(answer, f)
            os._exit(code)
        os.waitpid(pid, 0)
        return json.load(out)


def _watch(ppn: int, text: str) -> list[str]:
    from sagemaker_training import process

    async def go() -> None:
        reader = asyncio.StreamReader()
        reader.feed_data(text.encode("utf-8"))
        reader.feed_eof()
        await process.watch(reader, ppn)

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        asyncio.run(go())
    return buf.getvalue().splitlines()


def _sleeps() -> dict[str, list[Any]]:
    """The constant ``time.sleep`` calls of the runners' teardown (seconds)."""
    import ast
    import inspect
    import textwrap

    from sagemaker_training import mpi

    out = {}
    for name, fn in (
        ("master_run", mpi.MasterRunner.run),
        ("worker_run", mpi.WorkerRunner.run),
        ("worker_poll", mpi.WorkerRunner._wait_for_status_file),
    ):
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
        out[name] = [
            node.args[0].value
            for node in ast.walk(tree)
            if isinstance(node, ast.Call)
            and getattr(node.func, "attr", "") == "sleep"
            and node.args
            and isinstance(node.args[0], ast.Constant)
        ]
    return out


def _failure(item: dict[str, Any], cwd: str) -> dict[str, Any]:
    """The failure text for a command that prints ``stdout``/``stderr`` and exits ``code``:
    ``process.check_error`` as MasterRunner calls it, and ``str()`` of what it raises."""
    from sagemaker_training import process

    script = (
        "import sys; sys.stdout.write(sys.argv[1]); sys.stdout.flush(); "
        "sys.stderr.write(sys.argv[2]); sys.exit(int(sys.argv[3]))"
    )
    cmd = [sys.executable, "-c", script, item["stdout"], item["stderr"], str(item["code"])]
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            process.check_error(cmd, list(item["classes"]), 2, cwd=cwd, capture_error=True)
    except Exception as exc:  # the toolkit's error, whatever its class
        return {"cmd": cmd, "text": str(exc), "class": type(exc).__name__}
    return {"cmd": cmd, "text": None, "class": None}


def _toolkit_facts(items: list[dict[str, Any]], failures: list[dict[str, Any]]) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as base:
        os.environ["SAGEMAKER_BASE_DIR"] = base
        watch = [_watch(int(item["ppn"]), str(item["text"])) for item in items]
        failed = [_failure(item, base) for item in failures]
        return {"watch": watch, "sleeps": _sleeps(), "failures": failed}


def main() -> None:
    job = json.load(sys.stdin)
    from importlib.metadata import version

    answer: dict[str, Any] = {
        "versions": {
            name: version(name)
            for name in (
                "sagemaker-training",
                "sagemaker-tensorflow-training",
                "sagemaker-pytorch-training",
            )
        },
        "cases": {},
    }
    for case in job.get("cases", []):
        answer["cases"][case["id"]] = {
            host: _in_child(_run_host, case, host, root) for host, root in case["hosts"].items()
        }
    answer.update(_in_child(_toolkit_facts, job.get("watch", []), job.get("failures", [])))
    json.dump(answer, sys.stdout)


if __name__ == "__main__":
    main()
