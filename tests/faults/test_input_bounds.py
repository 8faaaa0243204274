"""Bounds on what a user hands in: the world, files, integers, mpirun options, secrets, links.

The real CLI runs as a subprocess. Cases that once exhausted memory or disk run
under rlimits (a regression fails the test instead of the machine), and cases that
once hung run under a deadline. Every refusal is one line, exit 2, nothing created.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
from pathlib import Path

import pytest

from tests.faults.test_input_faults import nothing_created, refused
from tests.helpers import BIN, ROLE, MotoServer, smmpi

SECRET = "wJalrXUtnFEMI-do-not-print"


def limited(
    args: list[str], env: dict[str, str], timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    """The CLI with at most 4 GiB of address space and 64 MiB per written file."""

    def limits() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))
        resource.setrlimit(resource.RLIMIT_FSIZE, (64 << 20, 64 << 20))

    return subprocess.run(
        [str(BIN / "smmpi"), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        preexec_fn=limits,
    )


def no_local_job(env: dict[str, str]) -> None:
    local = Path(env["HOME"]) / ".smmpi" / "local-jobs"
    assert not local.exists() or list(local.iterdir()) == []


# ---------------------------------------------------------------- the world, in every mode

WORLDS = [
    (["-N", "999999999999", "-n", "2"], "instances"),
    (["-N", "513", "-n", "1"], "instances"),
    (["-N", "2", "-n", "999999999999"], "ppn"),
    (["-N", "1", "-n", "257"], "ppn"),
]


@pytest.mark.parametrize(("shape", "field"), WORLDS, ids=["N-huge", "N-513", "n-huge", "n-257"])
@pytest.mark.parametrize("mode", [["--dry-run", "--json"], ["--local"], ["run"]])
def test_a_world_beyond_the_bounds_is_refused_before_anything_is_built(
    shape: list[str], field: str, mode: list[str], env: dict[str, str]
) -> None:
    args = ["run", "demo", *shape] if mode == ["run"] else ["submit", "demo", *shape, *mode]
    done = limited(args, env)
    refused(done, f"invalid {field}", shape[1] if field == "instances" else shape[3])
    assert "warning" not in done.stderr
    assert done.stdout == ""
    no_local_job(env)


@pytest.mark.aws
def test_a_world_beyond_the_bounds_is_refused_before_submitting(
    moto_server: MotoServer, aws: dict[str, str]
) -> None:
    done = limited(["submit", "demo", "-N", "999999999999", "-n", "2", "--role", ROLE], aws)
    refused(done, "instances", "512")
    nothing_created(moto_server, aws)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"instances": 10**12}, "instances"),
        ({"instances": 513}, "instances"),
        ({"ppn": 10**12}, "ppn"),
    ],
)
def test_the_python_api_has_the_same_bounds(kwargs: dict[str, int], field: str) -> None:
    from smmpi import MPIJob
    from smmpi.errors import BadInput

    with pytest.raises(BadInput) as caught:
        MPIJob("demo", **kwargs)
    assert caught.value.field == field


def test_the_largest_world_plans_as_sagemaker_would_receive_it() -> None:
    """512 instances x 256 processes: within SageMaker's InstanceCount range (botocore's model)."""
    from botocore.loaders import create_loader

    from smmpi import MPIJob

    model = create_loader().load_service_model("sagemaker", "service-2")["shapes"]
    assert model["TrainingInstanceCount"].get("min", 0) <= 512
    assert 512 <= model["TrainingInstanceCount"].get("max", 512)
    with pytest.warns(UserWarning, match="vCPUs"):  # ranks share cores: a note, not a refusal
        plan = MPIJob("demo", instances=512, ppn=256).plan()
    assert plan.request["ResourceConfig"]["InstanceCount"] == 512
    assert str(512 * 256) in plan.mpirun


# ---------------------------------------------------------------- files smmpi reads


def test_a_device_as_the_config_is_one_line_not_a_read_without_end(env: dict[str, str]) -> None:
    done = limited(["status", "somejob"], {**env, "SMMPI_CONFIG": "/dev/zero"})
    refused(done, "/dev/zero", "character device")


def _fifo(path: Path) -> Path:
    os.mkfifo(path)
    return path


@pytest.mark.parametrize(
    "command",
    [["status", "somejob"], ["submit", "demo", "-N", "1", "-n", "2", "--dry-run"]],
    ids=["status", "dry-run"],
)
def test_a_fifo_as_the_config_is_one_line_not_a_hang(
    command: list[str], env: dict[str, str], tmp_path: Path
) -> None:
    config = _fifo(tmp_path / "config.json")
    refused(limited(command, {**env, "SMMPI_CONFIG": str(config)}, timeout=30), "FIFO")


@pytest.mark.parametrize(
    "content",
    [b"[" * 100_000, b'{"a": ' * 100_000],
    ids=["list", "object"],
)
def test_a_config_nested_100000_deep_is_one_line(
    content: bytes, env: dict[str, str], tmp_path: Path
) -> None:
    config = tmp_path / "deep.json"
    config.write_bytes(content)
    done = limited(["status", "somejob"], {**env, "SMMPI_CONFIG": str(config)})
    refused(done, str(config), "nested too deeply")


def test_a_config_over_the_size_limit_is_one_line(env: dict[str, str], tmp_path: Path) -> None:
    config = tmp_path / "big.json"
    config.write_text(json.dumps({"region": "us-west-2", "pad": "x" * (1 << 20)}))
    refused(limited(["status", "somejob"], {**env, "SMMPI_CONFIG": str(config)}), "limit")


@pytest.mark.parametrize(
    "mode",
    [["run"], ["submit", "--dry-run"], ["submit", "--local"]],
    ids=["run", "dry-run", "local"],
)
def test_a_fifo_as_the_entry_script_is_one_line_not_a_hang(
    mode: list[str], env: dict[str, str], tmp_path: Path
) -> None:
    entry = _fifo(tmp_path / "fifo.py")
    args = [mode[0], str(entry), "-N", "1", "-n", "2", *mode[1:]]
    refused(limited([*args, "--timeout", "20"] if mode == ["run"] else args, env, 30), "FIFO")
    no_local_job(env)


SPECIAL_SOURCES = {
    "fifo": "FIFO",
    "device-link": "character device",
    "environ-link": "in /proc, the kernel's",
    "sys-link": "in /sys, the kernel's",
}


@pytest.mark.parametrize("special", list(SPECIAL_SOURCES))
@pytest.mark.parametrize("mode", [["--dry-run"], ["--local"]])
def test_a_special_file_in_the_source_dir_is_one_line(
    special: str, mode: list[str], env: dict[str, str], tmp_path: Path
) -> None:
    """Refused, not skipped: what ships must be what runs, and reading one never ends; nor
    does smmpi's own environment (/proc/self/environ) ship with the code."""
    code = tmp_path / "code"
    code.mkdir()
    (code / "train.py").write_text("print('hi')\n")
    if special == "fifo":
        _fifo(code / "queue")
    else:
        target = {
            "device-link": "/dev/zero",
            "environ-link": "/proc/self/environ",
            "sys-link": "/sys/kernel/uevent_seqnum",
        }
        (code / "queue").symlink_to(target[special])
    args = ["submit", str(code / "train.py"), "-N", "1", "-n", "2", "--source-dir", str(code)]
    done = limited([*args, *mode], env, 30)
    refused(done, "source_dir", "queue", SPECIAL_SOURCES[special])
    no_local_job(env)


def test_an_entry_script_over_the_size_limit_is_one_line(
    env: dict[str, str], tmp_path: Path
) -> None:
    """A sparse 1 GiB + 1 byte script: refused from its size, never read into memory."""
    entry = tmp_path / "big.py"
    with entry.open("wb") as f:
        f.truncate((1 << 30) + 1)
    refused(limited(["submit", str(entry), "-N", "1", "-n", "2", "--dry-run"], env), "limit")


SPECIAL_CHANNELS = {
    "fifo-in-folder": "FIFO",
    "fifo": "FIFO",
    "device": "in /dev, the kernel's files",
    "proc-environ": "in /proc, the kernel's files",
    "link-to-proc": "in /proc, the kernel's files",
    "link-in-folder-to-environ": "in /proc, the kernel's files",
    "sys": "in /sys, the kernel's files",
}


KERNEL_URIS = {
    "device": "file:///dev/zero",
    "proc-environ": "file:///proc/self/environ",
    "sys": "file:///sys/kernel",
}


def _special_channel(source: str, tmp_path: Path) -> str:
    """A ``file://`` channel of ``source``'s kind (the folder ``data`` holds regular files too)."""
    if source in KERNEL_URIS:
        return KERNEL_URIS[source]
    if source == "fifo":
        return _fifo(tmp_path / "fifo").as_uri()
    if source == "link-to-proc":
        (tmp_path / "proc").symlink_to("/proc")
        return (tmp_path / "proc").as_uri()
    data = tmp_path / "data"
    data.mkdir()
    (data / "part-0").write_text("1 2 3\n")
    if source == "fifo-in-folder":
        _fifo(data / "part-1")
    else:
        (data / "part-1").symlink_to("/proc/self/environ")
    return data.as_uri()


@pytest.mark.parametrize("source", list(SPECIAL_CHANNELS))
def test_a_file_channel_of_special_files_is_one_line(
    source: str, env: dict[str, str], tmp_path: Path
) -> None:
    """Nothing of this machine's kernel (smmpi's own environment, with its AWS keys, is
    /proc/self/environ) nor a file that never ends reaches the ranks: one line, exit 2."""
    env["AWS_SECRET_ACCESS_KEY"] = SECRET
    uri = _special_channel(source, tmp_path)
    args = ["submit", "demo", "-N", "1", "-n", "2", "--local", "--input", f"train={uri}"]
    done = limited(args, env, 60)
    refused(done, "train", SPECIAL_CHANNELS[source])
    assert SECRET not in done.stderr + done.stdout
    no_local_job(env)


def test_a_file_channel_of_regular_files_reaches_every_host(
    env: dict[str, str], tmp_path: Path
) -> None:
    data = tmp_path / "data"
    (data / "sub").mkdir(parents=True)
    (data / "sub" / "part-0").write_text("1 2 3\n")
    program = tmp_path / "read.py"
    program.write_text(
        "import os\nfrom mpi4py import MPI\n"
        "path = os.path.join(os.environ['SM_CHANNEL_TRAIN'], 'sub', 'part-0')\n"
        "print('rank', MPI.COMM_WORLD.rank, 'read', open(path).read().split())\n"
    )
    args = ["submit", str(program), "-N", "2", "-n", "1", "--local", "--input"]
    done = smmpi([*args, f"train={data.as_uri()}", "--timeout", "60"], env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("read ['1', '2', '3']") == 2, done.stdout


# ---------------------------------------------------------------- the config is never ignored


@pytest.mark.parametrize("kind", ["loop", "dangling", "empty-region", "blank-role"])
@pytest.mark.aws
def test_a_config_that_cannot_be_used_is_said_not_ignored(
    kind: str, moto_server: MotoServer, aws: dict[str, str], tmp_path: Path
) -> None:
    config = Path(aws["SMMPI_CONFIG"])
    if kind == "loop":
        config.symlink_to(config)
    elif kind == "dangling":
        config.symlink_to(tmp_path / "gone.json")
    else:
        config.write_text(json.dumps({"region": ""} if kind == "empty-region" else {"role": " "}))
    for command in (["status", "somejob"], ["submit", "demo", "-N", "1", "-n", "2", "--no-wait"]):
        done = smmpi(command, aws)
        refused(done, f"invalid config file {config}")
    nothing_created(moto_server, aws)


# ---------------------------------------------------------------- integers are ASCII

NOT_ASCII = ["２", "٢", "۲", "2²", "1_0"]


@pytest.mark.parametrize("value", NOT_ASCII)
@pytest.mark.parametrize(
    "args",
    [
        ["run", "demo", "-N", "{}", "-n", "2"],
        ["run", "demo", "-N", "1", "-n", "{}"],
        ["run", "demo", "-N", "1", "-n", "2", "--timeout", "{}"],
        ["submit", "demo", "-N", "{}", "-n", "2", "--dry-run"],
        ["submit", "demo", "-N", "1", "-n", "2", "--max-run", "{}", "--dry-run"],
        ["submit", "demo", "-N", "1", "-n", "2", "--keep-alive", "{}", "--dry-run"],
        ["local-jobs", "prune", "--keep", "{}"],
        ["jobs", "--limit", "{}"],
        ["logs", "somejob", "--rank", "{}"],
        ["logs", "somejob", "--interval", "{}"],
    ],
    ids=[
        "N",
        "n",
        "timeout",
        "submit-N",
        "max-run",
        "keep-alive",
        "prune",
        "limit",
        "rank",
        "interval",
    ],
)
def test_integers_in_other_digits_are_refused(
    args: list[str], value: str, env: dict[str, str]
) -> None:
    done = smmpi([a.replace("{}", value) for a in args], env)
    refused(done, repr(value))
    assert done.stdout == ""
    no_local_job(env)


@pytest.mark.parametrize("value", ["２", "٣"])
def test_an_env_setting_in_other_digits_is_refused(value: str, env: dict[str, str]) -> None:
    done = smmpi(["local-jobs", "prune"], {**env, "SMMPI_LOCAL_JOBS_KEEP": value})
    refused(done, "SMMPI_LOCAL_JOBS_KEEP", repr(value))


def test_the_python_api_refuses_other_digits_too() -> None:
    from smmpi import MPIJob
    from smmpi.errors import BadInput

    with pytest.raises(BadInput, match="instances"):
        MPIJob("demo", instances="２")  # type: ignore[arg-type]
    assert MPIJob("demo", instances=" 2 ", ppn="3").world_size == 6  # type: ignore[arg-type]


# ---------------------------------------------------------------- mpirun options

WORLD_OPTIONS = [
    "-np 7",
    "--np 7",
    "-n 3",
    "-c 3",
    "--host algo-1:2",
    "-H algo-1,algo-2",
    "--host=algo-1",
    "--hostfile /etc/hosts",
    "-machinefile /etc/hosts",
    "-npernode 1",
    "-N 1",
    "--map-by ppr:1:node",
    "--rank-by node",
    "--nolocal",
    "-mca plm_rsh_agent /bin/false",
    "--mca orte_default_hostfile /etc/hosts",
    "--app /etc/hosts",
    "--launch-agent /bin/false",
    "--prefix /nonexistent",
    "-wdir /tmp",
]


@pytest.mark.parametrize("options", WORLD_OPTIONS)
def test_mpi_options_that_change_the_world_or_the_launch_are_refused(
    options: str, env: dict[str, str]
) -> None:
    args = ["submit", "demo", "-N", "2", "-n", "2", "--dry-run", "--mpi-options", options]
    line = refused(smmpi(args, env), "mpi_options", options.split()[0])
    assert "--instances" in line or "--ppn" in line or "not options" in line or "code dir" in line


def test_the_python_api_refuses_them_as_a_list_too() -> None:
    from smmpi import MPIJob
    from smmpi.errors import BadInput

    with pytest.raises(BadInput, match="-N/--instances"):
        MPIJob("demo", mpi_options=["-x", "A=1", "-np", "7"])


def test_mpi_options_that_leave_the_world_alone_run(env: dict[str, str]) -> None:
    options = "-x FOO=1 --NCCL_DEBUG WARN --oversubscribe --bind-to core --report-bindings"
    args = ["submit", "demo", "-N", "2", "-n", "2", "--local", "--mpi-options", options]
    done = smmpi([*args, "--timeout", "90"], env)
    assert done.returncode == 0, done.stderr
    assert "all 4 ranks verified" in done.stdout


def test_path_from_env_that_hides_mpirun_is_named(env: dict[str, str]) -> None:
    args = ["submit", "demo", "-N", "1", "-n", "2", "--local", "--isolation", "hosts"]
    done = smmpi([*args, "--env", "PATH=/nonexistent", "--timeout", "60"], env)
    assert done.returncode == 1, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert "exited with code 127" in last and "PATH='/nonexistent'" in last, last
    assert "--env" in last, last


# ---------------------------------------------------------------- credentials


@pytest.mark.parametrize(
    "name",
    [
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_ACCESS_KEY_ID",
        "AWS_SECURITY_TOKEN",
        "AWS_CONTAINER_AUTHORIZATION_TOKEN",
        "AWS_CONTAINER_CREDENTIALS_FULL_URI",
        "AWS_SHARED_CREDENTIALS_FILE",
    ],
)
@pytest.mark.parametrize("command", [["run"], ["submit", "--local"]], ids=["run", "local"])
def test_credentials_are_refused_in_pass_env(
    name: str, command: list[str], env: dict[str, str]
) -> None:
    args = [command[0], "demo", "-N", "1", "-n", "2", *command[1:], "--pass-env", name]
    done = smmpi(args, {**env, name: SECRET})
    refused(done, "pass-env", name, "--with-credentials")
    assert SECRET not in done.stdout + done.stderr
    no_local_job(env)


@pytest.mark.parametrize("name", ["AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"])
def test_credentials_are_refused_in_env(name: str, env: dict[str, str]) -> None:
    args = ["submit", "demo", "-N", "1", "-n", "2", "--dry-run", "--json", "--env"]
    done = smmpi([*args, f"{name}={SECRET}"], env)
    refused(done, "env", name, "--with-credentials")
    assert SECRET not in done.stdout + done.stderr


# ---------------------------------------------------------------- links in the log dir


@pytest.mark.parametrize("plant", ["symlink", "hardlink", "fifo"])
@pytest.mark.parametrize("command", [["run"], ["submit", "--local"]], ids=["run", "local"])
def test_a_planted_log_file_is_refused_and_its_target_untouched(
    plant: str, command: list[str], env: dict[str, str], tmp_path: Path
) -> None:
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    logs = tmp_path / "L"
    logs.mkdir()
    planted = logs / ("mpirun.log" if plant == "fifo" else "rank-0.log")
    if plant == "symlink":
        planted.symlink_to(victim)
    elif plant == "hardlink":
        os.link(victim, planted)
    else:
        _fifo(planted)
    args = [command[0], "demo", "-N", "1", "-n", "2", *command[1:], "--log-dir", str(logs)]
    done = smmpi([*args, "--timeout", "30"], env, timeout=60)
    refused(done, "log_dir", planted.name)
    assert victim.read_text() == "precious\n"
    no_local_job(env)


def test_log_files_are_rewritten_on_a_second_run(env: dict[str, str], tmp_path: Path) -> None:
    logs = tmp_path / "L"
    for _ in range(2):
        done = smmpi(["run", "demo", "-N", "1", "-n", "2", "--log-dir", str(logs)], env)
        assert done.returncode == 0, done.stderr
    text = (logs / "rank-0.log").read_text()
    assert text.count("all 2 ranks verified") == 1, text
    assert not (logs / "rank-0.log").is_symlink()


def test_the_config_is_never_saved_through_a_link(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from smmpi import config
    from smmpi.errors import BadInput

    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    monkeypatch.setenv("SMMPI_CONFIG", str(tmp_path / "config.json"))
    (tmp_path / "config.tmp").symlink_to(victim)
    with pytest.raises(BadInput, match="link"):
        config.save({"region": "us-west-2"})
    assert victim.read_text() == "precious\n"


def test_fetched_archives_are_never_extracted_through_a_planted_link(tmp_path: Path) -> None:
    """``fetch --to`` extracts with :func:`smmpi.archives.extract`: a link already in the
    folder, named as a member, is refused, and what it points to is untouched."""
    from smmpi.archives import extract, pack
    from smmpi.errors import SmmpiError

    member = tmp_path / "model.bin"
    member.write_text("weights\n")
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    to = tmp_path / "to" / "model"
    to.mkdir(parents=True)
    (to / "model.bin").symlink_to(victim)
    with pytest.raises(SmmpiError, match=r"model\.bin"):
        extract(pack([(member, "model.bin")]), to)
    assert victim.read_text() == "precious\n"


def test_a_log_link_planted_after_the_check_is_not_written_through(tmp_path: Path) -> None:
    from smmpi.errors import BadInput
    from smmpi.supervision.output import Output

    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    logs = tmp_path / "L"
    logs.mkdir()
    (logs / "rank-1.log").symlink_to(victim)
    with pytest.raises(BadInput, match=r"rank-1\.log"):
        Output(2, logs, ppn=2)
    assert victim.read_text() == "precious\n"


@pytest.mark.aws
def test_an_s3_key_that_climbs_out_of_its_channel_is_refused(
    moto_server: MotoServer, aws: dict[str, str]
) -> None:
    s3 = moto_server.boto3_client("s3")
    s3.create_bucket(Bucket="bkt", CreateBucketConfiguration={"LocationConstraint": "us-west-2"})
    s3.put_object(Bucket="bkt", Key="data/part-0", Body=b"1 2 3\n")
    s3.put_object(Bucket="bkt", Key="data/../../../../../escape.txt", Body=b"out\n")
    args = ["submit", "demo", "-N", "1", "-n", "2", "--local", "--input", "train=s3://bkt/data/"]
    done = smmpi([*args, "--timeout", "60"], aws)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    # the refusal comes from inside the SDK's fit, which logs its troubleshooting line first
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("smmpi: invalid InputDataConfig.train: 'data/../"), last
    assert "'..'" in last, last
    assert not list(Path(aws["HOME"]).rglob("escape.txt"))
    no_local_job(aws)
