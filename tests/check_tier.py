"""`make check`: the tier of tests that start no mpirun and no server, so it answers in seconds.

Its modules are listed here. Under ``SMMPI_TEST_TIER=check`` a guard fails any of their tests
that starts mpirun (in this process, or in a CLI it starts: ``SMMPI_MPIRUN`` and ``PATH`` lead to
a stand-in that refuses) or a server (a socket bound, ``moto_server``, ``smmpi serve``), so a
slow test cannot creep into the fast tier unseen. `make test` runs the tier first, then
every other test (``SMMPI_TEST_TIER=rest``).
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

CHECK_TIER = os.environ.get("SMMPI_TEST_TIER") == "check"
#: `make test`'s passes after `make check` (``SMMPI_TEST_TIER=rest``): every test but the tier's,
#: which `make check` has just run
REST_TIER = os.environ.get("SMMPI_TEST_TIER") == "rest"
TESTS = Path(__file__).parent

#: Test modules (relative to tests/) that start no mpirun and no server
MODULES = frozenset(
    {
        "aws/test_clients.py",
        "compat/test_differences.py",
        "toolkit/test_driver_world.py",
        "runners/local/test_short_world.py",
        "aws/test_facts.py",
        "aws/test_limits.py",
        "aws/test_netguard.py",
        "aws/test_record.py",
        "cli/test_app.py",
        "model_trainer/test_request_fields.py",
        "ops/test_signals.py",
        "instances/hosts/test_argv.py",
        "runners/local/test_argv.py",
        "runners/local/test_bounds.py",
        "runners/local/test_each_host.py",
        "supervision/test_exits.py",
        "supervision/test_cpu_share.py",
        "supervision/test_hangs.py",
        "supervision/test_rank_records.py",
        "supervision/test_room.py",
        "supervision/test_tree.py",
        "supervision/test_verdict.py",
        "supervision/test_watch.py",
        "platform/test_opt_ml.py",
        "supervision/test_output.py",
        "runners/local/test_translate.py",
        "runners/local/test_venvs.py",
        "runners/local/test_entry.py",
        "runners/local/test_hostfiles.py",
        "runners/local/test_installs.py",
        "runners/local/test_pip_lines.py",
        "runners/local/test_req_files.py",
        "runners/local/test_toolkits.py",
        "runners/local/test_modes.py",
        "runners/local/test_instance_probes.py",
        "runners/local/test_mpi.py",
        "runners/local/test_records.py",
        "runners/local/test_trainer.py",
        "runners/local/test_trainer_pod.py",
        "runners/local/test_exact.py",
        "runners/sagemaker/test_follow.py",
        "runners/test_plan.py",
        "sdk/test_estimator.py",
        "sdk/test_model_trainer_v3.py",
        "sdk/test_session.py",
        "sdk/test_settings.py",
        "serve/test_coldkeys.py",
        "serve/test_describe_path.py",
        "spec/test_checks.py",
        "spec/test_job.py",
        "test_archives.py",
        "test_check_tier.py",
        "test_mpi_output.py",
        "test_pricing.py",
        "test_scheduling.py",
        "toolkit/test_environment.py",
        "toolkit/test_failure.py",
        "toolkit/test_images.py",
        "toolkit/test_mpirun.py",
        "toolkit/test_plan.py",
        "toolkit/test_container.py",
        "toolkit/test_hosts.py",
        "toolkit/test_request.py",
        "toolkit/test_shape.py",
        "toolkit/test_tags.py",
        "toolkit/test_worker_log.py",
        "toolkit/drivers/test_line.py",
        "toolkit/drivers/test_probe.py",
        "spec/test_pairs.py",
        "spec/test_spot.py",
        "spec/test_world.py",
        "spec/test_secrets.py",
        "spec/test_launch.py",
        "spec/test_versions.py",
        "spec/test_shell.py",
        "test_layout.py",
        "test_child.py",
        "test_errors.py",
        "test_config.py",
        "runners/test_base.py",
        "test_api.py",
        "serve/test_job_records.py",
        "ops/test_owners.py",
        "ops/test_settings.py",
        "test_mpi_lines.py",
        "runners/slurm/test_profile.py",
        "serve/test_errors.py",
        "ops/test_local_jobs.py",
        "ops/test_local_logs.py",
        "aws/test_environment.py",
        "test_catalog.py",
        "test_trees.py",
        "test_cpu_by_command.py",
        "test_bounded.py",
        "serve/test_described.py",
        "serve/test_model.py",
        "runners/slurm/test_verdict.py",
        "runners/slurm/test_commands.py",
        "runners/sagemaker/test_job.py",
        "spec/test_limits.py",
        "cli/test_options.py",
        "platform/test_layout.py",
        "instances/slurmcluster/test_layout.py",
        "serve/test_routing.py",
    }
)

_LAUNCHERS = {"mpirun", "mpiexec", "prterun", "orterun", "orted", "moto_server", "sshd"}


def in_check_tier(path: Path) -> bool:
    return path.resolve().relative_to(TESTS).as_posix() in MODULES


def _refused(what: str) -> RuntimeError:
    return RuntimeError(f"make check's tests start no mpirun and no server: {what}")


def _audit(event: str, args: tuple[object, ...]) -> None:
    if event == "socket.bind":
        raise _refused(f"a socket bound to {args[1]!r}")
    if event == "subprocess.Popen":
        argv = [str(a) for a in args[1]] if isinstance(args[1], list | tuple) else [str(args[1])]
        names = {Path(a).name for a in argv}
        if names & _LAUNCHERS or ("serve" in argv and any(n == "smmpi" for n in names)):
            raise _refused(" ".join(argv)[:200])


def refuse_mpirun_and_servers() -> None:
    """In this process an audit hook; in the processes it starts, stand-ins for the launchers
    first on PATH and as ``SMMPI_MPIRUN`` (tests/helpers.base_env keeps both)."""
    stubs = Path(tempfile.mkdtemp(prefix="smmpi-check-tier-"))
    for name in sorted(_LAUNCHERS):
        stub = stubs / name
        stub.write_text(f'#!/bin/sh\necho "make check\'s tests start no {name}" >&2\nexit 97\n')
        stub.chmod(0o755)
    os.environ["PATH"] = f"{stubs}{os.pathsep}{os.environ.get('PATH', '')}"
    os.environ["SMMPI_MPIRUN"] = str(stubs / "mpirun")
    os.environ["SMMPI_CHECK_TIER_STUBS"] = str(stubs)
    sys.addaudithook(_audit)
