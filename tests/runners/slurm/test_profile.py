"""SLURM profiles of the config file: loaded, overridden by flags, and every bad value one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from smmpi.errors import BadInput
from smmpi.runners.slurm.profile import TIME_RULE, Profile, check_time, load, save


@pytest.fixture
def config(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    where = tmp_path / "smmpi.json"
    monkeypatch.setenv("SMMPI_CONFIG", str(where))
    return where


def test_no_profile_is_the_defaults_and_a_saved_one_loads(config: Path) -> None:
    assert load() == Profile()
    save("lab", {"partition": "debug", "modules": ["module load mpi"], "launch": "mpirun"})
    save("cluster", {"jobcomp": "/var/log/slurm/jobcomp.txt"})
    save("default", {"time": "1-00:00"})
    lab = load("lab")
    assert (lab.name, lab.partition, lab.modules, lab.launch) == (
        "lab",
        "debug",
        ("module load mpi",),
        "mpirun",
    )
    assert load().time == "1-00:00"
    assert load("cluster").jobcomp == "/var/log/slurm/jobcomp.txt"
    assert load("lab", partition="gpu", account=None).partition == "gpu"  # the flag wins


@pytest.mark.parametrize("value", ["30", "30:00", "1:00:00", "2-0", "2-1:30", "2-1:30:05"])
def test_slurms_time_forms_pass(value: str) -> None:
    assert check_time(f" {value} ") == value


@pytest.mark.parametrize("value", ["0", "0:00", "1h", "-1", "1:2:3:4", ""])
def test_other_times_are_refused(value: str) -> None:
    with pytest.raises(BadInput) as refused:
        check_time(value)
    assert str(refused.value) == f"invalid time: {value!r}; allowed: {TIME_RULE}"


@pytest.mark.parametrize(
    ("saved", "line"),
    [
        ({"lab": []}, "invalid slurm_profiles.lab: []; allowed: an object of profile settings"),
        ({"lab": {"partiton": "x"}}, "invalid slurm_profiles.lab.partiton: 'x'; allowed: conf,"),
        ({"lab": {"modules": "m"}}, "invalid slurm_profiles.lab.modules: 'm'; allowed: a list"),
        ({"lab": {"bin": " "}}, "invalid slurm_profiles.lab.bin: ' '; allowed: a non-empty"),
        ({"lab": {"partition": "a b"}}, "invalid partition: 'a b'; allowed: letters, digits"),
        ({"lab": {"launch": "ssh"}}, "invalid launch: 'ssh'; allowed: auto | srun | mpirun"),
        ({"lab": {"jobcomp": "log/j.txt"}}, "invalid jobcomp: 'log/j.txt'; allowed: an absolute"),
    ],
)
def test_a_bad_profile_is_one_line_naming_the_setting(
    config: Path, saved: dict[str, object], line: str
) -> None:
    config.write_text(json.dumps({"slurm_profiles": saved}))
    with pytest.raises(BadInput) as refused:
        load("lab")
    assert str(refused.value).startswith(line)


def test_an_unknown_profile_names_the_known_ones(config: Path) -> None:
    with pytest.raises(BadInput, match=r"^invalid --profile: 'lab'; allowed: no profile is"):
        load("lab")
    save("a", {})
    save("b", {})
    with pytest.raises(BadInput, match=r"^invalid --profile: 'lab'; allowed: a, b$"):
        load("lab")
    with pytest.raises(BadInput, match="invalid account"):
        load("a", account="x y")
