"""A code dir's requirements.txt: reported, installed only into the job's folder when asked."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import smmpi


def _tiny_wheel(folder: Path) -> Path:
    """A minimal wheel built by hand, so pip installs it with no index and no build step."""
    import base64
    import hashlib
    import zipfile

    files = {
        "smmpi_tinypkg.py": "ANSWER = 42\n",
        "smmpi_tinypkg-1.0.dist-info/METADATA": (
            "Metadata-Version: 2.1\nName: smmpi-tinypkg\nVersion: 1.0\n"
        ),
        "smmpi_tinypkg-1.0.dist-info/WHEEL": (
            "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        ),
    }
    record = []
    for name, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=")
        record.append(f"{name},sha256={digest.decode()},{len(text.encode())}")
    record.append("smmpi_tinypkg-1.0.dist-info/RECORD,,")
    files["smmpi_tinypkg-1.0.dist-info/RECORD"] = "\n".join(record) + "\n"
    wheel = folder / "smmpi_tinypkg-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        for name, text in files.items():
            zf.writestr(name, text)
    return wheel


def test_requirements_reported_and_installed_only_when_asked(
    local_env: dict[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from smmpi.spec import MPIJob

    src = tmp_path / "src"
    src.mkdir()
    wheel = _tiny_wheel(tmp_path)
    (src / "requirements.txt").write_text(f"{wheel}\n")
    (src / "uses_dep.py").write_text(
        "from mpi4py import MPI\nimport smmpi_tinypkg\nassert smmpi_tinypkg.ANSWER == 42\n"
        "print('dependency ok on rank', MPI.COMM_WORLD.Get_rank())\n"
    )
    job = MPIJob(entry=str(src / "uses_dep.py"), source_dir=str(src), instances=1, ppn=2)

    plain = job.submit(local=True)
    err = capsys.readouterr().err
    assert "requirements.txt asks for" in err and "not installed here" in err
    assert plain.status == "Failed"
    assert "ModuleNotFoundError: No module named 'smmpi_tinypkg'" in plain.record["FailureReason"]

    installed = job.submit(local=True, install_requirements=True)
    out, err = capsys.readouterr()
    assert installed.status == "Completed", installed.record.get("FailureReason")
    assert out.count("dependency ok on rank") == 2
    assert (installed.folder / "site-packages" / "smmpi_tinypkg.py").is_file()

    cli = smmpi(
        [
            "submit",
            str(src / "uses_dep.py"),
            "--source-dir",
            str(src),
            "-N",
            "2",
            "-n",
            "1",
            "--local",
            "--install-requirements",
            "--job-name",
            "with-deps",
        ],
        local_env,
    )
    assert cli.returncode == 0, cli.stderr
    assert cli.stdout.count("dependency ok on rank") == 2
