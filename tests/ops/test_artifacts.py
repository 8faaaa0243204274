"""`smmpi fetch`: the model and output archives, downloaded and extracted safely."""

from __future__ import annotations

import io
import os
import tarfile
from pathlib import Path

import pytest

from smmpi import archives
from smmpi.errors import SmmpiError
from tests.helpers import MotoServer, smmpi, tar_gz
from tests.ops.jobs import BUCKET, JOB, cli_env, create_job, run

pytestmark = pytest.mark.aws


def test_fetch_downloads_and_extracts_both_archives(
    moto_server: MotoServer, env: dict[str, str], tmp_path: Path
) -> None:
    create_job(moto_server)
    s3 = moto_server.boto3_client("s3")
    s3.create_bucket(Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": "us-west-2"})
    prefix = f"jobs/{JOB}/output"
    s3.put_object(
        Bucket=BUCKET,
        Key=f"{prefix}/model.tar.gz",
        Body=tar_gz({"weights.npy": b"w" * 10, "sub/config.json": b"{}"}),
    )
    s3.put_object(
        Bucket=BUCKET,
        Key=f"{prefix}/output.tar.gz",
        Body=tar_gz({"data/rank-0.txt": b"rank 0 done\n"}),
    )
    dest = tmp_path / "artifacts"
    done = run(["fetch", JOB, "--to", str(dest)], cli_env(env, moto_server))
    assert done.returncode == 0, done.stderr
    assert (dest / "model" / "weights.npy").read_bytes() == b"w" * 10
    assert (dest / "model" / "sub" / "config.json").read_text() == "{}"
    assert (dest / "output" / "data" / "rank-0.txt").read_text() == "rank 0 done\n"
    assert not list(dest.glob("*.tar.gz"))
    assert done.stdout.splitlines() == [
        f"model: 2 file(s) in {dest / 'model'}",
        f"output: 1 file(s) in {dest / 'output'}",
    ]


def test_fetch_default_dir_and_a_missing_archive(
    moto_server: MotoServer, env: dict[str, str], tmp_path: Path
) -> None:
    create_job(moto_server)
    s3 = moto_server.boto3_client("s3")
    s3.create_bucket(Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": "us-west-2"})
    s3.put_object(
        Bucket=BUCKET, Key=f"jobs/{JOB}/output/output.tar.gz", Body=tar_gz({"log.txt": b"x"})
    )
    done = smmpi(["fetch", JOB], cli_env(env, moto_server), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / JOB / "output" / "log.txt").read_text() == "x"
    assert f"model: no archive at s3://{BUCKET}/jobs/{JOB}/output/model.tar.gz" in done.stderr


def test_fetch_with_nothing_to_fetch_fails(
    moto_server: MotoServer, env: dict[str, str], tmp_path: Path
) -> None:
    create_job(moto_server)
    moto_server.boto3_client("s3").create_bucket(
        Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": "us-west-2"}
    )
    done = run(["fetch", JOB, "--to", str(tmp_path / "d")], cli_env(env, moto_server))
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        f"smmpi: {JOB} (Completed) has no model or output archive at "
        f"s3://{BUCKET}/jobs/{JOB}/output/model.tar.gz, "
        f"s3://{BUCKET}/jobs/{JOB}/output/output.tar.gz"
    ]


def test_fetch_refuses_archive_members_outside_the_directory(tmp_path: Path) -> None:
    archive = tmp_path / "model.tar.gz"
    archive.write_bytes(tar_gz({"../escaped.txt": b"x"}))
    with pytest.raises(SmmpiError, match=r"refusing unsafe member '\.\./escaped\.txt'"):
        archives.extract(archive, tmp_path / "model")
    assert not (tmp_path / "escaped.txt").exists()


def _link(name: str, target: str) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = tarfile.SYMTYPE, target
    return info


def _put_model(moto_server: MotoServer, members: list[tuple[tarfile.TarInfo, bytes]]) -> None:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for info, data in members:
            if info.isfile():
                info.size = len(data)
            tar.addfile(info, io.BytesIO(data) if info.isfile() else None)
    create_job(moto_server)
    s3 = moto_server.boto3_client("s3")
    s3.create_bucket(Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": "us-west-2"})
    s3.put_object(Bucket=BUCKET, Key=f"jobs/{JOB}/output/model.tar.gz", Body=buf.getvalue())


def test_fetch_keeps_a_models_links_inside_it_as_links(
    moto_server: MotoServer, env: dict[str, str], tmp_path: Path
) -> None:
    """A model packed as SageMaker packs it: ``latest`` is a link to a folder beside it."""
    _put_model(moto_server, [(tarfile.TarInfo("ckpt-3/w"), b"w"), (_link("latest", "ckpt-3"), b"")])
    done = run(["fetch", JOB, "--to", str(tmp_path / "d")], cli_env(env, moto_server))
    assert done.returncode == 0, done.stderr
    assert os.readlink(tmp_path / "d" / "model" / "latest") == "ckpt-3"
    assert (tmp_path / "d" / "model" / "latest" / "w").read_bytes() == b"w"


@pytest.mark.parametrize("hostile", ["through-its-own-link", "through-a-link-on-disk"])
def test_fetch_of_a_hostile_archive_never_writes_through_a_link(
    moto_server: MotoServer, env: dict[str, str], tmp_path: Path, hostile: str
) -> None:
    dest = tmp_path / "d"
    theirs = tmp_path / "theirs.txt"  # a file of the user's, beside the folder
    theirs.write_text("the user's")
    (dest / "model").mkdir(parents=True)
    if hostile == "through-its-own-link":
        members = [(_link("here", "."), b""), (tarfile.TarInfo("here/weights"), b"x")]
        needle = "refusing member 'here/weights': here is a link"
    else:  # the user's folder already holds a link where the archive writes a file
        (dest / "model" / "weights").symlink_to(dest / "kept")
        (dest / "kept").write_text("the user's")
        members = [(tarfile.TarInfo("weights"), b"x")]
        needle = "member 'weights'"
    _put_model(moto_server, members)
    done = run(["fetch", JOB, "--to", str(dest)], cli_env(env, moto_server))
    assert done.returncode == 1, done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert needle in line, line
    assert theirs.read_text() == "the user's"
    assert not (dest / "model" / "here").exists()
    assert not (dest / "model" / "weights").exists() or (dest / "kept").read_text() == "the user's"
