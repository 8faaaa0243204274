"""The container's line on isolated hosts: only the documented substitutions."""

from __future__ import annotations

from smmpi.instances.hosts.argv import isolated_argv, substitutions

# Seed 004's line, as SageMaker's log shows it.
SEED_004 = (
    "mpirun --host algo-1:2,algo-2:2,algo-3:2 -np 6 --allow-run-as-root --display-map "
    "--tag-output -mca btl_tcp_if_include eth0 -mca oob_tcp_if_include eth0 -mca "
    "plm_rsh_no_tree_spawn 1 -bind-to none -map-by slot -mca pml ob1 -mca btl ^openib -mca "
    "orte_abort_on_non_zero_status 1 -x NCCL_MIN_NRINGS=4 -x NCCL_SOCKET_IFNAME=eth0 -x "
    "NCCL_DEBUG=INFO -x LD_LIBRARY_PATH -x PATH -x LD_PRELOAD=/usr/local/lib/python3.7/"
    "site-packages/gethostname.cpython-37m-x86_64-linux-gnu.so -x SM_HOSTS -x SM_CURRENT_HOST "
    "-x PYTHONPATH /usr/local/bin/python3.7 -m mpi4py mpi_demo.py --model_dir /opt/ml/model"
).split()


def test_only_agent_shim_and_interpreter_change() -> None:
    got = isolated_argv(SEED_004, "/venv/bin/python", "/run/agent")
    expected = list(SEED_004)
    expected[1:1] = ["-mca", "plm_rsh_agent", "/run/agent"]
    shim = next(i for i, t in enumerate(expected) if t.startswith("LD_PRELOAD="))
    assert expected[shim - 1] == "-x"
    del expected[shim - 1 : shim + 1]
    expected[expected.index("/usr/local/bin/python3.7")] = "/venv/bin/python"
    assert got == expected


def test_substitutions_say_why() -> None:
    subs = substitutions(SEED_004, "/venv/bin/python", "/run/agent")
    assert [(s.container[:1], s.local[:1]) for s in subs] == [
        (("mpirun",), ("mpirun",)),
        (("-x",), ()),
        (("/usr/local/bin/python3.7",), ("/venv/bin/python",)),
    ]
    assert all(s.why for s in subs)


def test_program_arguments_named_like_python_are_kept() -> None:
    line = ["mpirun", "-np", "2", "/usr/local/bin/python3", "-m", "mpi4py", "a.py", "python3"]
    assert isolated_argv(line, "/p", "/a")[-5:] == ["/p", "-m", "mpi4py", "a.py", "python3"]
