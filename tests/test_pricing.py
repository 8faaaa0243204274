"""The shipped on-demand price table and ``estimate`` (which ``submit --dry-run`` prints)."""

from __future__ import annotations

import re
from datetime import date

import pytest

from smmpi import pricing
from smmpi.errors import BadInput

COMMON = [
    f"ml.{family}.{size}"
    for family, size in [
        ("c5", "xlarge"),
        ("c5", "2xlarge"),
        ("c5", "18xlarge"),
        ("m5", "xlarge"),
        ("m5", "24xlarge"),
        ("c6i", "2xlarge"),
        ("c6i", "32xlarge"),
        ("p3", "2xlarge"),
        ("p3", "16xlarge"),
        ("g5", "xlarge"),
        ("g5", "48xlarge"),
        ("g4dn", "xlarge"),
        ("p4d", "24xlarge"),
    ]
]


def test_seed_004_job_costs_what_the_table_says() -> None:
    """3 x ml.c5.2xlarge for the 270 billable seconds of seed 004, and for a 1-day ceiling."""
    est = pricing.estimate("ml.c5.2xlarge", 3, 86400, "us-west-2")
    unit = pricing.table()["regions"]["us-west-2"]["ml.c5.2xlarge"]
    assert est["price_per_instance_hour"] == unit
    assert est["price_per_hour"] == pytest.approx(3 * unit)
    assert est["max_cost"] == pytest.approx(round(3 * unit * 24, 2))
    short = pricing.estimate("ml.c5.2xlarge", 3, 270, "us-west-2")
    assert short["max_cost"] == pytest.approx(round(3 * unit * 270 / 3600, 2))
    assert est["estimate"] is True
    assert est["currency"] == "USD"
    assert est["as_of"] == pricing.table()["as_of"]


def test_table_is_dated_labelled_and_covers_common_types_in_several_regions() -> None:
    data = pricing.table()
    assert date.fromisoformat(data["as_of"]) <= date.today()
    assert "ESTIMATE" in data["label"]
    assert len(data["regions"]) >= 5
    for region, prices in data["regions"].items():
        assert re.fullmatch(r"[a-z]{2}-[a-z]+-\d", region)
        for instance_type in COMMON:
            assert prices[instance_type] > 0, (region, instance_type)
        assert all(t.startswith("ml.") for t in prices)


def test_prices_are_plausible() -> None:
    """Bigger sizes cost more, GPUs more than CPUs, and regions differ from us-east-1 upward."""
    us = pricing.table()["regions"]["us-east-1"]
    assert us["ml.c5.xlarge"] < us["ml.c5.2xlarge"] < us["ml.c5.4xlarge"] < us["ml.c5.18xlarge"]
    assert us["ml.p3.2xlarge"] > us["ml.c5.18xlarge"] / 2
    assert us["ml.g5.xlarge"] > us["ml.c5.xlarge"]
    eu = pricing.table()["regions"]["eu-west-1"]
    assert all(eu[t] >= us[t] for t in us)


def test_region_matters_and_defaults_to_us_east_1() -> None:
    us = pricing.estimate("ml.m5.xlarge", 2, 3600)
    assert us["region"] == "us-east-1"
    tokyo = pricing.estimate("ml.m5.xlarge", 2, 3600, "ap-northeast-1")
    assert tokyo["price_per_hour"] > us["price_per_hour"]
    assert tokyo["max_cost"] == pytest.approx(round(tokyo["price_per_hour"], 2))


def test_unknown_type_or_region_gives_no_price_and_says_why() -> None:
    est = pricing.estimate("ml.z9.mega", 1, 60, "us-east-1")
    assert est["price_per_hour"] is None and est["max_cost"] is None
    assert est["note"].startswith("no price for ml.z9.mega in us-east-1")
    est = pricing.estimate("ml.c5.xlarge", 1, 60, "xx-nowhere-1")
    assert est["price_per_instance_hour"] is None
    assert est["note"].startswith("no prices for region xx-nowhere-1; the table covers ")
    assert pricing.describe(est).startswith("cost: 1 x ml.c5.xlarge in xx-nowhere-1: unknown (")


@pytest.mark.parametrize(
    ("count", "max_run"), [(0, 60), (-1, 60), (1.5, 60), (True, 60), (1, 0), (1, -5), (1, "60")]
)
def test_bad_numbers_are_bad_input(count: object, max_run: object) -> None:
    with pytest.raises(BadInput):
        pricing.estimate("ml.c5.xlarge", count, max_run, "us-east-1")  # type: ignore[arg-type]


def test_describe_is_one_labelled_line() -> None:
    est = pricing.estimate("ml.c5.2xlarge", 3, 86400, "us-west-2")
    line = pricing.describe(est)
    assert "\n" not in line
    assert line == (
        f"cost (estimate, on-demand prices as of {est['as_of']}): 3 x ml.c5.2xlarge "
        f"in us-west-2: ~${est['price_per_hour']:.2f}/h; at most "
        f"~${est['max_cost']:.2f} if it runs the full max run of 86400 s"
    )


def test_teardown_is_counted_per_instance() -> None:
    """The toolkit sleeps 30 s on every instance after the program ends (MasterRunner.run,
    WorkerRunner.run); the estimate says so on its own line, with what it costs."""
    est = pricing.estimate("ml.c5.2xlarge", 3, 3600, "us-east-1")
    assert est["teardown_s_per_instance"] == 30
    assert est["teardown_cost"] == round(est["price_per_hour"] * 30 / 3600, 4)
    line = pricing.teardown_line(est)
    assert line.startswith("teardown: >= 30 s per instance after your program ends")
    assert f"~${est['teardown_cost']:.4f} for 3 instance(s)" in line
    unknown = pricing.estimate("ml.c5.2xlarge", 2, 60, "xx-nowhere-1")
    assert pricing.teardown_line(unknown).endswith("(the container toolkit's waits)")


def test_model_trainers_teardown_is_one_poll_of_its_workers() -> None:
    """ModelTrainer's MPI driver has no toolkit sleep: algo-1 ends after writing the status
    file, each worker looks for it every 30 s, and one instance has no worker to wait for."""
    est = pricing.estimate("ml.c5.2xlarge", 2, 3600, "us-east-1", api="model-trainer")
    assert est["teardown_s_per_instance"] == pricing.DRIVER_POLL_S == 30
    line = pricing.teardown_line(est)
    assert line.startswith("teardown: up to 30 s after your program ends")
    assert f"up to ~${est['teardown_cost']:.4f} for 2 instance(s)" in line
    one = pricing.estimate("ml.c5.2xlarge", 1, 3600, "us-east-1", api="model-trainer")
    assert one["teardown_s_per_instance"] == 0 and one["teardown_cost"] == 0
    assert pricing.teardown_line(one).startswith("teardown: none")
