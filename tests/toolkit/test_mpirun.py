"""The container's mpirun line and the request's reading, as the toolkit builds them."""

from __future__ import annotations

import shlex

import pytest

from smmpi.spec import MPIJob
from smmpi.toolkit import mpirun
from smmpi.toolkit import request as toolkit_request

# Seed 004's log: the line the sagemaker-training toolkit ran on algo-1 (TF 2.3, py37).
SEED_004_MPIRUN = (
    "mpirun --host algo-1:2,algo-2:2,algo-3:2 -np 6 --allow-run-as-root --display-map "
    "--tag-output -mca btl_tcp_if_include eth0 -mca oob_tcp_if_include eth0 -mca "
    "plm_rsh_no_tree_spawn 1 -bind-to none -map-by slot -mca pml ob1 -mca btl ^openib -mca "
    "orte_abort_on_non_zero_status 1 -x NCCL_MIN_NRINGS=4 -x NCCL_SOCKET_IFNAME=eth0 -x "
    "NCCL_DEBUG=INFO -x LD_LIBRARY_PATH -x PATH -x LD_PRELOAD=/usr/local/lib/python3.7/"
    "site-packages/gethostname.cpython-37m-x86_64-linux-gnu.so -x SM_HOSTS -x "
    "SM_NETWORK_INTERFACE_NAME -x SM_HPS -x SM_USER_ENTRY_POINT -x SM_FRAMEWORK_PARAMS -x "
    "SM_RESOURCE_CONFIG -x SM_INPUT_DATA_CONFIG -x SM_OUTPUT_DATA_DIR -x SM_CHANNELS -x "
    "SM_CURRENT_HOST -x SM_MODULE_NAME -x SM_LOG_LEVEL -x SM_FRAMEWORK_MODULE -x SM_INPUT_DIR "
    "-x SM_INPUT_CONFIG_DIR -x SM_OUTPUT_DIR -x SM_NUM_CPUS -x SM_NUM_GPUS -x SM_MODEL_DIR -x "
    "SM_MODULE_DIR -x SM_TRAINING_ENV -x SM_USER_ARGS -x SM_OUTPUT_INTERMEDIATE_DIR -x "
    "SM_HP_MODEL_DIR -x PYTHONPATH /usr/local/bin/python3.7 -m mpi4py mpi_demo.py "
    "--model_dir /opt/ml/model"
)


pytestmark = pytest.mark.usefixtures("no_aws_settings")


def test_mpirun_matches_seed_004_modulo_toolkit_5() -> None:
    """Same flags as the reference run; the toolkit 5.x additions are the only differences."""
    request = MPIJob("demo", instances=3, ppn=2, region="us-west-2").plan().request
    ours = mpirun.container_mpirun(request)
    seed = shlex.split(SEED_004_MPIRUN)
    # 5.x adds one MCA flag and SM_* variables; the image is py312, the script demo.py.
    added_mca = ["-mca", "btl_vader_single_copy_mechanism", "none"]
    i = ours.index("btl_vader_single_copy_mechanism") - 1
    assert ours[i : i + 3] == added_mca
    ours_wo = ours[:i] + ours[i + 3 :]
    preload = next(a for a in seed if a.startswith("LD_PRELOAD="))
    cut = seed.index(preload)
    assert ours_wo[:cut] == seed[:cut]
    assert ours_wo[cut] == (
        "LD_PRELOAD=/usr/local/lib/python3.12/site-packages/"
        "gethostname.cpython-312-x86_64-linux-gnu.so"
    )
    seed_vars = [seed[k + 1] for k in range(cut, len(seed) - 1) if seed[k] == "-x"]
    our_vars = [ours_wo[k + 1] for k in range(cut, len(ours_wo) - 1) if ours_wo[k] == "-x"]
    assert [v for v in our_vars if v in seed_vars] == seed_vars  # same order, a superset
    assert ours[-6:] == [
        "/usr/local/bin/python3.12",
        "-m",
        "mpi4py",
        "demo.py",
        "--model_dir",
        "/opt/ml/model",
    ]


def test_mpirun_options_hyperparameters_and_single_process_hosts() -> None:
    job = MPIJob(
        "demo",
        instances=2,
        ppn=1,
        framework="pytorch",
        region="us-west-2",
        mpi_options="--NCCL_DEBUG WARN -x FOO=1",
        hyperparameters=["epochs=3", "b=x"],
    )
    argv = job.plan().mpirun
    assert argv[1:5] == ["--host", "algo-1,algo-2", "-np", "2"]
    assert "NCCL_DEBUG=WARN" in argv
    preload = next(i for i, a in enumerate(argv) if a.startswith("LD_PRELOAD="))
    assert argv[preload + 1 : preload + 3] == ["-x", "FOO=1"]
    assert "SM_HP_EPOCHS" in argv and "SM_HP_B" in argv
    assert "SM_HP_MODEL_DIR" not in argv  # only TensorFlow adds model_dir
    assert argv[-8:] == [
        "/usr/local/bin/python3.12",
        "-m",
        "mpi4py",
        "demo.py",
        "-b",
        "x",
        "--epochs",
        "3",
    ]


def test_efa_instances_get_efa_variables() -> None:
    request = {
        "AlgorithmSpecification": {"TrainingImage": "x/pytorch-training:2.8.0-gpu-py312"},
        "ResourceConfig": {"InstanceCount": 2, "InstanceType": "ml.p4d.24xlarge"},
        "HyperParameters": {
            "sagemaker_program": '"train.py"',
            "sagemaker_mpi_num_of_processes_per_host": "8",
        },
    }
    argv = mpirun.container_mpirun(request)
    text = " ".join(argv)
    assert "-x FI_PROVIDER=efa -x NCCL_PROTO=simple -x FI_EFA_USE_DEVICE_RDMA=1" in text
    assert argv[:5] == ["mpirun", "--host", "algo-1:8,algo-2:8", "-np", "16"]


def test_pure_helpers_for_local_mode() -> None:
    request = MPIJob("demo", instances=3, ppn=2, region="us-west-2", env={"A": "1"}).plan().request
    assert toolkit_request.hosts(request) == ["algo-1", "algo-2", "algo-3"]
    assert toolkit_request.processes_per_host(request) == 2
    assert toolkit_request.world_size(request) == 6
    assert toolkit_request.program(request) == "demo.py"
    assert toolkit_request.user_hyperparameters(request) == {"model_dir": "/opt/ml/model"}
    assert toolkit_request.framework_params(request) == {
        "sagemaker_mpi_enabled": True,
        "sagemaker_mpi_num_of_processes_per_host": 2,
        "sagemaker_mpi_custom_mpi_options": "",
    }
    assert mpirun.container_env_names(request)[0] == "SM_HOSTS"
    assert mpirun.container_env_names(request)[-1] == "PYTHONPATH"
    assert request["Environment"] == {"A": "1"}
