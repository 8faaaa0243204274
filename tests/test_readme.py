"""The README cannot rot: every `bash` block in it runs here, and the output it shows is checked.

Each block runs as written, with `bash -e -o pipefail`, in a fresh folder, with the venv first on
PATH and no AWS credentials of the machine. A command that is meant to fail is written
`... || echo "exit N"`. The `text` block that follows a `bash` block shows that block's output:
every line of it without `...`, a duration or an address must appear in what the block printed.
The set-up block (`make demo`, `make test`) is the one exception: CI runs `make test` itself, and
`test_make_demo_runs_what_the_readme_says` checks what `make demo` runs.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
from pathlib import Path

import pytest

from tests.conftest import ROOT

README = ROOT / "README.md"
_BLOCK_RE = re.compile(r"```(\w+)\n(.*?)```", re.S)
_FUZZY = re.compile(r"\.\.\.|…|\d+\.\d+ s\b|0x[0-9a-f]|^\s*$")


def _blocks() -> list[tuple[str, str, str | None]]:
    """(id, bash script, expected output or None) for every runnable block, in order."""
    found = _BLOCK_RE.findall(README.read_text(encoding="utf-8"))
    out: list[tuple[str, str, str | None]] = []
    for i, (lang, body) in enumerate(found):
        if lang != "bash" or "make demo" in body:
            continue
        expected = found[i + 1][1] if i + 1 < len(found) and found[i + 1][0] == "text" else None
        first = next(line for line in body.splitlines() if line.strip())
        out.append((first[:40], body, expected))
    return out


BLOCKS = _blocks()


def test_readme_has_runnable_blocks() -> None:
    assert len(BLOCKS) >= 6
    assert any("smmpi submit demo --instances 3 --ppn 2 --local" in b for _, b, _ in BLOCKS)


@pytest.mark.parametrize(("name", "script", "expected"), BLOCKS, ids=[b[0] for b in BLOCKS])
def test_readme_block(
    name: str, script: str, expected: str | None, env: dict[str, str], tmp_path: Path
) -> None:
    env["SMMPI_LOCAL_JOBS"] = str(tmp_path / "local-jobs")
    proc = subprocess.Popen(
        ["bash", "-e", "-o", "pipefail", "-c", script],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        output, _ = proc.communicate(timeout=240)
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # a background moto server, if the block failed
        except ProcessLookupError:
            pass
    assert proc.returncode == 0, output[-3000:]
    if '|| echo "exit $?"' in script:  # meant to fail: it did, with a code the README shows
        assert re.search(r"^exit [1-9]\d*$", output, re.M), output[-2000:]
    if expected:
        for line in expected.splitlines():
            if not _FUZZY.search(line):
                assert line in output, f"README shows {line!r}, the command printed:\n{output}"
    assert "testing-secret" not in output


def test_make_demo_runs_what_the_readme_says() -> None:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    demo = makefile.split("\ndemo:", 1)[1].split("\n\n", 1)[0]
    assert "smmpi submit demo --instances 3 --ppn 2 --local" in demo
    readme = README.read_text(encoding="utf-8")
    assert readme.index("make demo") < readme.index("make test") < readme.index("## One-minute")
