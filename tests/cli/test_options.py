"""The shared option groups: numbers in ASCII digits only, and each group applied whole."""

from __future__ import annotations

import json
from typing import Any

import click
import pytest
from click.testing import CliRunner

from smmpi.cli.options import (
    AsciiInt,
    Seconds,
    local_run_options,
    pass_env_options,
    request_choice_options,
    shape_options,
)


@click.command()
@shape_options("instances", "ppn", False)
@local_run_options("timeout", "log dir", "requirements")
@pass_env_options()
@request_choice_options()
@click.option("--count", type=AsciiInt("--count", 1), default=None)
@click.option("--wait-for", type=Seconds("--wait-for"), default=None)
def probe(**given: Any) -> None:
    click.echo(json.dumps({k: v for k, v in given.items() if v not in (None, (), False)}))


def _run(*argv: str) -> tuple[int, str]:
    done = CliRunner().invoke(probe, list(argv))
    return done.exit_code, done.output


def test_each_group_brings_its_options_and_defaults() -> None:
    code, out = _run(
        "-N", "3", "--timeout", "60", "--pass-env", "A", "--env", "K=V", "--count", "2",
        "--wait-for", "1.5", "--isolation", "processes",
    )  # fmt: skip
    assert code == 0, out
    shown = json.loads(out)  # the keywords the command got
    assert shown["instances"] == "3" and shown["ppn"] == 2  # the spec checks them, as given
    assert shown["timeout"] == 60.0 and shown["wait_for"] == 1.5 and shown["count"] == 2
    assert shown["pass_env"] == ["A"] and shown["env"] == ["K=V"]
    assert shown["isolation"] == "processes"


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (["--count", "１２"], "invalid --count: '１２'; allowed: an integer >= 1 in ASCII digits"),
        (["--count", "0"], "invalid --count: '0'; allowed: an integer >= 1 in ASCII digits"),
        (["--wait-for", "nan"], "invalid --wait-for: 'nan'; allowed: a finite number of seconds"),
        (["--wait-for", "-1"], "invalid --wait-for: '-1'; allowed: a finite number of seconds"),
        (["--timeout", "0.0000001"], "invalid --timeout: '0.0000001'; allowed: seconds from"),
    ],
)
def test_a_bad_number_is_one_line_naming_the_flag(argv: list[str], line: str) -> None:
    code, out = _run(*argv)
    assert code == 2
    assert f"Error: Invalid value for '{argv[0]}': {line}" in out
