"""The images' own ENV and toolkit version, as the Dockerfiles and the toolkits' pins give them."""

from __future__ import annotations

import pytest

from smmpi.toolkit.images import image_env, toolkit_version

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
