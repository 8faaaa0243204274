"""The README and docs/ cannot rot: every `bash` block in them runs here, and the output each
shows is checked.

Each block runs as written, with `bash -e -o pipefail`, in a fresh folder, with the venv first on
PATH, no AWS credentials of the machine and smmpi's default local mode (the output it shows is
that mode's, whatever ``SMMPI_ISOLATION`` the suite runs under). A command that is meant to
fail is written `... || echo "exit N"`. The `text` block that follows a `bash` block shows that
block's output:
every line of it without `...`, a duration or an address must appear in what the block printed.
The set-up block (`make demo`, `make test`) is the one exception: CI runs `make test` itself, and
`test_make_demo_runs_what_the_readme_says` checks what `make demo` runs.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import ROOT, MotoServer

README = ROOT / "README.md"
#: The user's guide and the pages it links to: their blocks run alike
GUIDES = [README, *sorted((ROOT / "docs").glob("*.md"))]
_BLOCK_RE = re.compile(r"```(\w+)\n(.*?)```", re.S)
_FUZZY = re.compile(r"\.\.\.|…|\d+\.\d+ s\b|0x[0-9a-f]|^\s*$")


def _blocks() -> list[tuple[str, str, str | None]]:
    """(id, bash script, expected output or None) for every runnable block, in order."""
    out: list[tuple[str, str, str | None]] = []
    for guide in GUIDES:
        found = _BLOCK_RE.findall(guide.read_text(encoding="utf-8"))
        prefix = "" if guide == README else f"{guide.stem}:"
        for i, (lang, body) in enumerate(found):
            if lang != "bash" or "make demo" in body:
                continue
            after = found[i + 1] if i + 1 < len(found) else None
            expected = after[1] if after and after[0] == "text" else None
            first = next(line for line in body.splitlines() if line.strip())
            out.append((prefix + first[:40], body, expected))
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
    env.pop("SMMPI_ISOLATION", None)
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


def test_readme_python_api_block(
    env: dict[str, str], moto_server: MotoServer, tmp_path: Path
) -> None:
    """The Python API example, run as written against a moto server."""
    found = _BLOCK_RE.findall(README.read_text(encoding="utf-8"))
    index = next(i for i, (lang, _) in enumerate(found) if lang == "python")
    code, expected = found[index][1], found[index + 1][1].strip()
    env.update(moto_server.aws_env())
    env.update(
        SMMPI_ROLE="arn:aws:iam::123456789012:role/readme",
        SMMPI_LOCAL_JOBS=str(tmp_path / "local-jobs"),
    )
    r = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.strip().splitlines()[-1] == expected
    jobs = moto_server.boto3_client("sagemaker").list_training_jobs()["TrainingJobSummaries"]
    assert len(jobs) == 1  # local runs created nothing on the endpoint; submit created one job


def test_make_demo_runs_what_the_readme_says() -> None:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    demo = makefile.split("\ndemo:", 1)[1].split("\n\n", 1)[0]
    assert "smmpi submit demo --instances 3 --ppn 2 --local" in demo
    readme = README.read_text(encoding="utf-8")
    assert readme.index("make demo") < readme.index("make test") < readme.index("## One-minute")


def test_readme_is_a_short_guide_whose_links_resolve() -> None:
    """The user's guide stays short; the detail it leaves to docs/ is one link away and there."""
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 350
    links = re.findall(r"\]\(((?:docs|benchmarks)/[^)#]+)\)", text)
    assert {"docs/EMULATION.md", "docs/DEVELOPMENT.md", "benchmarks/RESULTS.md"} <= set(links)
    for link in links:
        assert (ROOT / link).is_file(), link
