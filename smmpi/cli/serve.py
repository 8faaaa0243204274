"""``smmpi serve``: SageMaker's training API on this machine (the server lives in smmpi.serve)."""

from __future__ import annotations

import importlib.util
import signal
import sys
import threading
import time
from typing import Any

import click

from smmpi.errors import BadInput, SmmpiError


class MissingServe(SmmpiError):
    """serve's optional dependencies are not installed (exit code 2: nothing started)."""

    exit_code = 2


LOOPBACK = ("127.0.0.1", "localhost", "::1")


def _exports(env: dict[str, str]) -> list[str]:
    return [f"export {name}={value}" for name, value in env.items()]


def _print_env(server: Any, wait: float = 30.0) -> None:
    """The export lines of the serve running on this state folder (waits for it to start)."""
    from smmpi.serve.state import load_keys

    deadline = time.monotonic() + wait
    while (url := server.running_url()) is None:
        if time.monotonic() > deadline:
            raise BadInput("--state", str(server.root), "the state folder of a running smmpi serve")
        time.sleep(0.1)
    server.use_url(url)
    server.keys = load_keys(server.root)  # the running serve's pair (it may have made it)
    for line in _exports(server.env):
        click.echo(line)


def _stop_on_sigterm() -> None:
    def on_term(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, on_term)


def _start(server: Any, bind: str) -> None:
    """Start ``server``; a state file it cannot read or write is one line that names it."""
    try:
        server.start()
    except OSError as err:
        where = str(err.filename or server.root)
        raise BadInput("--state", where, f"a state folder serve can use ({err.strerror})") from None
    if bind not in LOOPBACK:
        click.echo(
            f"smmpi serve: warning: listening on {bind}: other machines can reach it "
            "(only serve's key pair is accepted)",
            err=True,
        )


@click.command("serve")
@click.option("--port", type=int, default=8765, show_default=True, help="0: any free port.")
@click.option("--bind", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--state", default=None, help="State folder [default: ~/.smmpi/serve].")
@click.option("--parallel", type=int, default=1, show_default=True, help="Jobs run at once.")
@click.option(
    "--isolation",
    type=click.Choice(["auto", "hosts", "processes"]),
    default=None,
    help="How jobs emulate instances [default: $SMMPI_ISOLATION, else auto].",
)
@click.option(
    "--exact",
    is_flag=True,
    help="Run every job in exact mode: a real sshd on port 22 of every instance, mpirun "
    "reaching the workers through ssh (isolated hosts, as root, with openssh-server).",
)
@click.option(
    "--env",
    "env_only",
    is_flag=True,
    help="Print the export lines of the serve running on --state, and exit.",
)
def serve_cmd(
    port: int,
    bind: str,
    state: str | None,
    parallel: int,
    isolation: str | None,
    exact: bool,
    env_only: bool,
) -> None:
    """SageMaker's training API here: every training job runs for real, on this machine.

    Prints the variables to export (endpoint, region, serve's own key pair),
    then one line per job event. Ctrl-C or SIGTERM stops it: running jobs end
    Stopped with their artifacts uploaded, and the state is kept for the next start.
    """
    if not 0 <= port <= 65535:
        raise BadInput("--port", port, "a port number from 0 to 65535")
    if parallel < 1:
        raise BadInput("--parallel", parallel, "an integer >= 1")
    if exact and not env_only:  # where exact mode cannot run, say so before any other need
        from smmpi.runners.local.exact import check

        check(isolation, 2)
    if importlib.util.find_spec("moto") is None or importlib.util.find_spec("flask") is None:
        raise MissingServe(
            "smmpi serve needs moto's server app: pip install 'smmpi[serve]' (moto[server])"
        )
    from smmpi.serve import Server
    from smmpi.serve.front import listen

    if not env_only:  # an address or port serve cannot have: one line, before anything is made
        listen(bind, port).close()

    def event(line: str) -> None:
        click.echo(f"smmpi serve: {line}")

    server = Server(
        state, port=port, bind=bind, parallel=parallel, isolation=isolation, event=event,
        exact=exact and not env_only,
    )  # fmt: skip
    if env_only:
        _print_env(server)
        return
    _stop_on_sigterm()
    _start(server, bind)
    for line in _exports(server.env):
        click.echo(line)
    click.echo(f"smmpi serve: listening on {server.url}, state in {server.root}")
    sys.stdout.flush()
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        click.echo("smmpi serve: stopping (running jobs end Stopped, artifacts uploaded)")
        server.stop()
        click.echo("smmpi serve: stopped; state saved")
