"""`smmpi jobs`: only the jobs carrying smmpi's tag, against a moto server."""

from __future__ import annotations

import json

import pytest

from tests.helpers import MotoServer
from tests.ops.jobs import cli_env, create_job, run

pytestmark = pytest.mark.aws


def test_jobs_lists_only_smmpi_jobs(moto_server: MotoServer, env: dict[str, str]) -> None:
    create_job(moto_server, "smmpi-one")
    create_job(moto_server, "made-by-someone-else", tagged=False)
    create_job(moto_server, "smmpi-two")
    done = run(["jobs"], cli_env(env, moto_server))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split() == ["JOB", "STATUS", "CREATED", "TOOK"]
    assert sorted(line.split()[0] for line in lines[1:]) == ["smmpi-one", "smmpi-two"]
    listed = json.loads(run(["jobs", "--json", "--limit", "1"], cli_env(env, moto_server)).stdout)
    assert len(listed) == 1
    assert listed[0]["name"] in {"smmpi-one", "smmpi-two"}


def test_jobs_when_there_are_none(moto_server: MotoServer, env: dict[str, str]) -> None:
    create_job(moto_server, "made-by-someone-else", tagged=False)
    done = run(["jobs"], cli_env(env, moto_server))
    assert done.returncode == 0
    assert done.stdout == ""
    assert "no jobs submitted by smmpi" in done.stderr
