"""One ``smmpi serve`` for the session (each test uses its own bucket and job names)."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import pytest

from tests.helpers import base_env
from tests.nobody import nobody_venv
from tests.serve.serving import ServeProcess, make_bucket

_counter = itertools.count()


@pytest.fixture(scope="session")
def serve_session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    root = tmp_path_factory.mktemp("serve")
    server = ServeProcess(root / "state", base_env(root))
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def serve(serve_session: ServeProcess) -> ServeProcess:
    assert serve_session.proc.poll() is None, "smmpi serve died:\n" + "\n".join(
        serve_session.lines[-30:]
    )
    return serve_session


@pytest.fixture
def bucket(serve: ServeProcess, request: pytest.FixtureRequest) -> str:
    name = f"serve-test-{next(_counter)}-{abs(hash(request.node.name)) % 10**8}"
    make_bucket(serve, name)
    return name


@pytest.fixture
def job_name(request: pytest.FixtureRequest) -> str:
    return f"t{next(_counter)}-{abs(hash(request.node.name)) % 10**10}"


@pytest.fixture(scope="session")
def nobody_smmpi() -> Iterator[str]:
    """User 65534's own ``smmpi`` (the checkout and its venv may be root's only)."""
    yield from (str(venv / "bin" / "smmpi") for venv in nobody_venv())
