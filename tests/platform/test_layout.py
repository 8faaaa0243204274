"""What a run's processes get from this machine: mpirun's environment, the variables the user
passes, and the lines that say what differs from SageMaker."""

from __future__ import annotations

import pytest

from smmpi.errors import BadInput
from smmpi.platform.layout import (
    credentials_note,
    launch_env,
    left_out_mpi,
    passed_variables,
)

SHELL = {
    "PATH": "/usr/bin",
    "HOME": "/root",
    "AWS_SECRET_ACCESS_KEY": "testing-secret",
    "AWS_REGION": "eu-west-1",
    "OMPI_MCA_plm": "isolated",
    "OMPI_ALLOW_RUN_AS_ROOT": "1",
    "PMIX_MCA_gds": "hash",
    "MY_SETTING": "x",
}


def test_mpirun_gets_the_machines_basics_and_nothing_else_of_the_shell() -> None:
    env = launch_env({"OMPI_ALLOW_RUN_AS_ROOT": "1"}, SHELL)
    assert env == {
        "LC_ALL": "C.UTF-8",
        "PATH": "/usr/bin",
        "HOME": "/root",
        "OMPI_ALLOW_RUN_AS_ROOT": "1",
    }


def test_the_shells_open_mpi_settings_are_named_as_left_out() -> None:
    line = left_out_mpi(SHELL)
    assert line is not None
    assert line.startswith("smmpi: left out this shell's Open MPI settings (OMPI_MCA_plm, PMIX")
    assert "OMPI_ALLOW_RUN_AS_ROOT" not in line  # smmpi sets it itself, as the container does
    assert left_out_mpi({"PATH": "/usr/bin", "OMPI_ALLOW_RUN_AS_ROOT": "1"}) is None


def test_only_the_named_variables_pass_and_credentials_only_when_asked() -> None:
    assert passed_variables(["MY_SETTING"], False, SHELL) == {"MY_SETTING": "x"}
    both = passed_variables([], True, SHELL)
    assert both == {"AWS_SECRET_ACCESS_KEY": "testing-secret", "AWS_REGION": "eu-west-1"}
    note = credentials_note(both)
    assert note is not None and "testing-secret" not in note
    assert note.startswith("smmpi: the ranks get this shell's AWS settings (AWS_SECRET_ACCESS_KEY")
    assert credentials_note({"MY_SETTING": "x"}) is None


@pytest.mark.parametrize(
    ("name", "allowed"),
    [
        ("AWS_SECRET_ACCESS_KEY", "--with-credentials"),
        ("1BAD", "a variable name (letters, digits, _)"),
        ("NOT_SET_HERE", "a variable set in this shell"),
    ],
)
def test_a_name_that_cannot_pass_is_one_line(name: str, allowed: str) -> None:
    with pytest.raises(BadInput) as refused:
        passed_variables([name], False, SHELL)
    assert str(refused.value).startswith(f"invalid pass-env: {name!r}; allowed: ")
    assert allowed in str(refused.value)


def test_an_interrupt_leaves_each_host_only_once_every_started_host_has_ended(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Ctrl-C while the hosts are laid out: no host is under way when it is raised (the
    caller then removes the job's folder). Python 3.11's Thread.join, interrupted, marks a
    thread that still runs as ended; a folder removed then got files written after."""
    import os
    import signal
    import threading
    import time

    from smmpi.platform.layout import each_host

    monkeypatch.setattr(os, "cpu_count", lambda: 4)  # two threads, one host each
    under_way = threading.Barrier(3)
    ended: list[str] = []

    def work(host: str) -> str:
        under_way.wait(10)
        layout = [t for t in threading.enumerate() if t.name == "smmpi-layout"]
        # the first thread (the one the caller waits for first) ends last
        time.sleep(2.0 if threading.current_thread() is layout[0] else 0.5)
        ended.append(host)
        return host

    def interrupt() -> None:
        under_way.wait(10)  # both hosts begun, the caller waiting for them
        time.sleep(0.2)
        os.kill(os.getpid(), signal.SIGINT)

    threading.Thread(target=interrupt, daemon=True).start()
    with pytest.raises(KeyboardInterrupt):
        each_host(["algo-1", "algo-2"], work)
    assert sorted(ended) == ["algo-1", "algo-2"]
