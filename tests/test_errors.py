"""The errors users see as one line, and the exit code each stands for."""

from __future__ import annotations

from smmpi.errors import BadInput, MPINotFound, SmmpiError, TimedOut


def test_each_error_has_the_exit_code_of_the_design() -> None:
    assert SmmpiError("x").exit_code == 1  # the job failed
    assert BadInput("ppn", 0, "an integer >= 1").exit_code == 2  # bad input, nothing ran
    assert MPINotFound("no mpirun").exit_code == 2
    assert TimedOut("late").exit_code == 124


def test_bad_input_names_the_field_the_value_and_what_is_allowed() -> None:
    err = BadInput("instances", "three", "an integer >= 1")
    assert str(err) == "invalid instances: 'three'; allowed: an integer >= 1"
    assert (err.field, err.value, err.allowed) == ("instances", "three", "an integer >= 1")
    assert isinstance(err, ValueError) and isinstance(err, SmmpiError)
    assert "\n" not in str(BadInput("env", "a\nb", "one line"))  # repr keeps it on one line
