"""The world a job may ask for: instances within SageMaker's range and smmpi's cap, ppn bounded."""

from __future__ import annotations

import pytest
from botocore.loaders import create_loader

from smmpi.errors import BadInput
from smmpi.spec.world import MAX_INSTANCES, MAX_PPN, check_instances, check_ppn, instance_range


def test_the_range_is_botocores_within_smmpis_cap() -> None:
    shape = create_loader().load_service_model("sagemaker", "service-2")["shapes"]
    low = int(shape["TrainingInstanceCount"].get("min", 1))
    assert instance_range() == (max(1, low), MAX_INSTANCES)


def test_in_range_values_pass_in_every_form() -> None:
    assert check_instances(3) == 3 and check_instances("3") == 3
    assert check_instances(MAX_INSTANCES) == MAX_INSTANCES
    assert check_ppn(MAX_PPN) == MAX_PPN and check_ppn("2") == 2


@pytest.mark.parametrize(
    ("check", "value", "field"),
    [
        (check_instances, 0, "instances"),
        (check_instances, MAX_INSTANCES + 1, "instances"),
        (check_instances, 2.5, "instances"),
        (check_instances, True, "instances"),
        (check_ppn, 0, "ppn"),
        (check_ppn, MAX_PPN + 1, "ppn"),
        (check_ppn, "-1", "ppn"),
    ],
)
def test_out_of_range_is_one_line_naming_the_field(
    check: object, value: object, field: str
) -> None:
    with pytest.raises(BadInput) as refused:
        check(value)  # type: ignore[operator]
    assert str(refused.value).startswith(f"invalid {field}: ")
    assert "\n" not in str(refused.value)
