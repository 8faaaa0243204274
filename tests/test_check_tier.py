"""`make check`'s guard: a test of the fast tier that starts mpirun or a server fails."""

from __future__ import annotations

import pytest

from tests.check_tier import _audit


@pytest.mark.parametrize(
    "argv",
    [
        ["/venv/bin/mpirun", "-np", "2", "python"],
        ["moto_server", "-p", "5000"],
        ["/venv/bin/smmpi", "serve", "--port", "0"],
    ],
)
def test_starting_mpirun_or_a_server_is_refused(argv: list[str]) -> None:
    with pytest.raises(RuntimeError, match="start no mpirun and no server"):
        _audit("subprocess.Popen", (argv[0], argv, None, None))


def test_binding_a_socket_is_refused_and_other_processes_are_not() -> None:
    with pytest.raises(RuntimeError, match="a socket bound"):
        _audit("socket.bind", (object(), ("127.0.0.1", 0)))
    _audit("subprocess.Popen", ("python", ["python", "-c", "pass"], None, None))
    _audit("open", ("file", "r", 0))
