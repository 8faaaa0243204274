"""The ranks' sitecustomize: a user's own sitecustomize still runs."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import smmpi, write


def test_users_sitecustomize_still_runs(run_env: dict[str, str], tmp_path: Path) -> None:
    """smmpi's stack-dump hook is a sitecustomize; a user's own one must still run on the ranks.

    The user's one is in the code dir, which is on the ranks' PYTHONPATH in the
    container as here (this shell's PYTHONPATH does not reach the ranks).
    """
    site = tmp_path / "usersite"
    site.mkdir()
    (site / "sitecustomize.py").write_text("import os\nos.environ['USER_SITE_RAN'] = 'yes'\n")
    script = write(
        site / "site_check.py",
        (
            "import os\nfrom mpi4py import MPI\n"
            "assert os.environ.get('USER_SITE_RAN') == 'yes', 'user sitecustomize did not run'\n"
            "print('site ok', MPI.COMM_WORLD.Get_rank())\n"
        ),
    )
    r = smmpi(["run", str(script), "--source-dir", str(site), "-N", "1", "-n", "2"], run_env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("site ok") == 2
