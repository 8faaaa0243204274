"""The images' own ENV and toolkit version, as the Dockerfiles and the toolkits' pins give them."""

from __future__ import annotations

import pytest

from smmpi.aws.facts import known_instance_types, vcpus
from smmpi.toolkit.images import image_env, num_gpus, num_neurons, toolkit_version

REGISTRY = "763104351884.dkr.ecr.us-east-1.amazonaws.com"


@pytest.mark.parametrize("device", ["cpu", "gpu"])
def test_both_tensorflow_images_set_tf_version(device: str) -> None:
    """Dockerfile.cpu and cu125/Dockerfile.gpu both have ``ENV TF_VERSION=2.19``."""
    env = image_env(f"{REGISTRY}/tensorflow-training:2.19.0-{device}-py312")
    assert env["TF_VERSION"] == "2.19"
    assert env["PYTHON"] == "python3.12"


def test_the_tensorflow_images_run_toolkit_4() -> None:
    assert toolkit_version(f"{REGISTRY}/tensorflow-training:2.19.0-cpu-py312") == "4.8.3"
    assert toolkit_version(f"{REGISTRY}/pytorch-training:2.8.0-cpu-py312") == "5.1.4"


def _accelerated_training_types() -> list[str]:
    """Every ml.p*, ml.g* and Trainium type in botocore's TrainingInstanceType enum."""
    known = known_instance_types()
    assert known is not None  # botocore is installed with smmpi[aws]
    family = [t for t in known if t.split(".")[1][:1] in ("p", "g") or ".trn" in t]
    return sorted(family)


def test_every_gpu_training_type_botocore_lists_has_gpus_and_vcpus() -> None:
    """ml.g7e.*, ml.p5.4xlarge, ml.p6-b300... got SM_NUM_GPUS=0 and the CPU image."""
    types = _accelerated_training_types()
    assert "ml.p5.48xlarge" in types and "ml.trn1.32xlarge" in types
    missing = [t for t in types if ".trn" not in t and num_gpus(t) <= 0]
    assert missing == []
    assert [t for t in types if vcpus(t) is None] == []


@pytest.mark.parametrize(
    ("instance_type", "gpus", "cpus"),
    [
        ("ml.p5.4xlarge", 1, 16),
        ("ml.p5.48xlarge", 8, 192),
        ("ml.p5en.48xlarge", 8, 192),
        ("ml.p6-b300.48xlarge", 8, 192),
        ("ml.p6e-gb200.36xlarge", 4, 144),
        ("ml.g6e.xlarge", 1, 4),
        ("ml.g6e.16xlarge", 1, 64),
        ("ml.g6e.12xlarge", 4, 48),
        ("ml.g6e.48xlarge", 8, 192),
        ("ml.g7e.8xlarge", 1, 32),
        ("ml.g7e.12xlarge", 2, 48),
        ("ml.g7e.24xlarge", 4, 96),
        ("ml.g7.48xlarge", 8, 192),
        ("ml.c5.2xlarge", 0, 8),
    ],
)
def test_published_gpu_and_vcpu_counts(instance_type: str, gpus: int, cpus: int) -> None:
    assert (num_gpus(instance_type), vcpus(instance_type)) == (gpus, cpus)


def test_trainium_has_neuron_cores_and_no_gpu() -> None:
    """The toolkit counts NeuronCores (neuron-ls; 64 hard-coded for trn2.48xlarge)."""
    for instance_type in (t for t in _accelerated_training_types() if ".trn" in t):
        assert num_gpus(instance_type) == 0
        assert num_neurons(instance_type) > 0, instance_type
    assert num_neurons("ml.trn2.48xlarge") == 64
    assert num_neurons("ml.trn1.32xlarge") == 32
    assert num_neurons("ml.p5.48xlarge") == 0
