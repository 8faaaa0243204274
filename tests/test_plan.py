"""The plan: CreateTrainingJob request and the container's mpirun argv, against golden files.

Regenerate the golden files after an intended change with
``SMMPI_UPDATE_GOLDEN=1 pytest tests/test_plan.py`` and review the diff.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import time
from pathlib import Path
from typing import Any

import pytest

from smmpi import plan as planlib
from smmpi.errors import BadInput
from smmpi.spec import MPIJob

GOLDEN = Path(__file__).parent / "golden"
ROLE = "arn:aws:iam::123456789012:role/x"
JOB_NAME = "smmpi-demo-GOLDEN"

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


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No credentials, no SMMPI_* settings: planning must not need them."""
    for var in list(os.environ):
        if var.startswith(("AWS_", "SMMPI_")):
            monkeypatch.delenv(var)
    monkeypatch.setenv("SMMPI_CONFIG", str(tmp_path / "none.json"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-aws-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


def normalise(data: Any) -> Any:
    """Replace generated job names (smmpi-ENTRY-date) with a fixed marker."""
    text = json.dumps(data, indent=2, sort_keys=True)
    text = re.sub(r"smmpi-([a-z0-9-]+?)-\d{4}(-\d{2}){5}-\d{3}", r"smmpi-\1-GOLDEN", text)
    return json.loads(text)


def check_golden(name: str, data: Any) -> None:
    path = GOLDEN / name
    data = normalise(data)
    if os.environ.get("SMMPI_UPDATE_GOLDEN"):
        path.parent.mkdir(exist_ok=True)
        path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    assert path.exists(), f"missing {path}; create it with SMMPI_UPDATE_GOLDEN=1"
    assert data == json.loads(path.read_text())


@pytest.mark.parametrize("framework", ["tensorflow", "pytorch"])
def test_golden_demo_3x2(framework: str) -> None:
    job = MPIJob(
        "demo",
        instances=3,
        ppn=2,
        framework=framework,
        role=ROLE,
        bucket="smmpi-golden-bucket",
        region="us-west-2",
    )
    result = job.plan(job_name=JOB_NAME)
    check_golden(f"demo_3x2_{framework}.request.json", result.request)
    check_golden(f"demo_3x2_{framework}.mpirun.json", result.mpirun)
    assert result.world_size == 6
    assert result.placeholders == []


def test_generated_job_name_is_normalised() -> None:
    result = MPIJob("demo", instances=3, ppn=2, role=ROLE, region="us-west-2").plan()
    assert re.fullmatch(r"smmpi-demo-\d{4}(-\d{2}){5}-\d{3}", result.job_name)
    assert normalise(result.job_name) == "smmpi-demo-GOLDEN"


def test_request_carries_the_mpi_block_and_tag() -> None:
    request = MPIJob("demo", instances=3, ppn=2, region="us-west-2").plan().request
    hp = planlib.decode_hyperparameters(request)
    assert hp["sagemaker_mpi_enabled"] is True
    assert hp["sagemaker_mpi_num_of_processes_per_host"] == 2
    assert hp["sagemaker_program"] == "demo.py"
    assert request["ResourceConfig"] == {
        "InstanceCount": 3,
        "InstanceType": "ml.c5.2xlarge",
        "VolumeSizeInGB": 30,
    }
    assert {"Key": "smmpi:managed", "Value": "true"} in request["Tags"]
    assert request["AlgorithmSpecification"]["TrainingImage"].endswith(
        "/tensorflow-training:2.19.0-cpu-py312"
    )
    # No debugger/profiler side jobs billed for an MPI program.
    assert "DebugHookConfig" not in request
    assert request["ProfilerConfig"] == {"DisableProfiler": True}


def test_missing_role_and_bucket_are_marked_placeholders() -> None:
    result = MPIJob("demo", instances=3, ppn=2).plan()
    assert result.request["RoleArn"] == "<role: set --role or SMMPI_ROLE>"
    assert result.code_uri.startswith("s3://<bucket: set --bucket or SMMPI_BUCKET>/")
    assert "smmpi-dry-run" not in json.dumps(result.to_json())
    assert any("region" in note for note in result.notes)


def test_mpirun_matches_seed_004_modulo_toolkit_5() -> None:
    """Same flags as the reference run; the toolkit 5.x additions are the only differences."""
    request = MPIJob("demo", instances=3, ppn=2, region="us-west-2").plan().request
    ours = planlib.container_mpirun(request)
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
    argv = planlib.container_mpirun(request)
    text = " ".join(argv)
    assert "-x FI_PROVIDER=efa -x NCCL_PROTO=simple -x FI_EFA_USE_DEVICE_RDMA=1" in text
    assert argv[:5] == ["mpirun", "--host", "algo-1:8,algo-2:8", "-np", "16"]


def test_pure_helpers_for_local_mode() -> None:
    request = MPIJob("demo", instances=3, ppn=2, region="us-west-2", env={"A": "1"}).plan().request
    assert planlib.hosts(request) == ["algo-1", "algo-2", "algo-3"]
    assert planlib.processes_per_host(request) == 2
    assert planlib.world_size(request) == 6
    assert planlib.program(request) == "demo.py"
    assert planlib.user_hyperparameters(request) == {"model_dir": "/opt/ml/model"}
    assert planlib.framework_params(request) == {
        "sagemaker_mpi_enabled": True,
        "sagemaker_mpi_num_of_processes_per_host": 2,
        "sagemaker_mpi_custom_mpi_options": "",
    }
    assert planlib.container_env_names(request)[0] == "SM_HOSTS"
    assert planlib.container_env_names(request)[-1] == "PYTHONPATH"
    assert request["Environment"] == {"A": "1"}


def test_plan_64x96_is_fast() -> None:
    job = MPIJob("demo", instances=64, ppn=96, instance_type="ml.m5.24xlarge", region="us-west-2")
    job.plan()  # first call pays the SDK import
    start = time.perf_counter()
    result = MPIJob(
        "demo", instances=64, ppn=96, instance_type="ml.m5.24xlarge", region="us-west-2"
    ).plan()
    elapsed = time.perf_counter() - start
    assert result.world_size == 6144
    assert result.mpirun[2].count(",") == 63
    assert elapsed < 5  # generous here; benchmarks/bench_submit.py measures the real figure


def test_telemetry_opt_out_config_is_valid_for_the_sdk() -> None:
    """smmpi skips the SDK's repeated schema check for this constant; prove it is valid."""
    from sagemaker.config.config import validate_sagemaker_config

    from smmpi.estimator import TELEMETRY_OPT_OUT_CONFIG, import_sdk

    import_sdk()
    validate_sagemaker_config(TELEMETRY_OPT_OUT_CONFIG)
    assert TELEMETRY_OPT_OUT_CONFIG["SageMaker"]["PythonSDK"]["Modules"]["TelemetryOptOut"]


def test_every_optional_field_reaches_the_request() -> None:
    job = MPIJob(
        "demo",
        instances=2,
        ppn=2,
        region="us-west-2",
        role=ROLE,
        bucket="bkt",
        use_spot=True,
        max_run=1800,
        checkpoint_s3_uri="s3://bkt/ckpt",
        encrypt_inter_container_traffic=True,
        network_isolation=True,
        subnets=["subnet-0abc"],
        security_groups=["sg-0abc"],
        volume_size=50,
        tags={"team": "hpc"},
        output_path="s3://bkt/out",
        base_job_name="mpi-test",
    )
    result = job.plan()
    req = result.request
    assert result.job_name.startswith("mpi-test-")
    assert req["StoppingCondition"] == {"MaxRuntimeInSeconds": 1800, "MaxWaitTimeInSeconds": 1800}
    assert req["ResourceConfig"]["VolumeSizeInGB"] == 50
    assert req["EnableManagedSpotTraining"] is True
    assert req["CheckpointConfig"] == {"S3Uri": "s3://bkt/ckpt"}
    assert req["EnableNetworkIsolation"] is True
    assert req["EnableInterContainerTrafficEncryption"] is True
    assert req["VpcConfig"] == {"Subnets": ["subnet-0abc"], "SecurityGroupIds": ["sg-0abc"]}
    assert req["OutputDataConfig"]["S3OutputPath"] == "s3://bkt/out"
    assert {"Key": "team", "Value": "hpc"} in req["Tags"]
    # Under network isolation the code arrives as a "code" channel, and the toolkit
    # forwards that channel's variable too.
    assert [c["ChannelName"] for c in req["InputDataConfig"]] == ["code"]
    assert "SM_CHANNEL_CODE" in result.mpirun
    warm = MPIJob("demo", region="us-west-2", keep_alive=600).plan().request
    assert warm["ResourceConfig"]["KeepAlivePeriodInSeconds"] == 600
    with pytest.raises(BadInput, match="keep_alive"):
        MPIJob("demo", use_spot=True, keep_alive=600)


def test_input_channels_reach_the_request_and_the_mpirun_line() -> None:
    job = MPIJob("demo", instances=2, ppn=2, inputs=["train=s3://bkt/train", "val=s3://bkt/v"])
    result = job.plan()
    channels = {
        c["ChannelName"]: c["DataSource"]["S3DataSource"]["S3Uri"]
        for c in result.request["InputDataConfig"]
    }
    assert channels == {"train": "s3://bkt/train", "val": "s3://bkt/v"}
    assert "SM_CHANNEL_TRAIN" in result.mpirun and "SM_CHANNEL_VAL" in result.mpirun
    with pytest.raises(BadInput, match="file:// works only with --local"):
        MPIJob("demo", inputs={"train": f"file://{GOLDEN}"}).plan()


def test_vpc_from_the_config_file(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """What `smmpi infra deploy --vpc-id` saved is used when the job names no VPC."""
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps({"security_group_ids": ["sg-0abc"], "subnets": ["subnet-0abc"]}))
    monkeypatch.setenv("SMMPI_CONFIG", str(cfg))
    req = MPIJob("demo", region="us-west-2").plan().request
    assert req["VpcConfig"] == {"Subnets": ["subnet-0abc"], "SecurityGroupIds": ["sg-0abc"]}
    own = MPIJob("demo", region="us-west-2", security_groups=["sg-0def"]).plan().request
    assert own["VpcConfig"] == {"Subnets": ["subnet-0abc"], "SecurityGroupIds": ["sg-0def"]}
    cfg.write_text(json.dumps({"security_group_ids": ["sg-0abc"]}))  # deployed without subnets
    with pytest.raises(BadInput) as info:
        MPIJob("demo", region="us-west-2").plan()
    assert info.value.field == "subnets" and "--subnet" in str(info.value)
    cfg.write_text("{}")
    assert "VpcConfig" not in MPIJob("demo", region="us-west-2").plan().request
