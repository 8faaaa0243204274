"""Every module has its tests in the mirrored file: ``smmpi/a/b.py`` in ``tests/a/test_b.py``.

A module whose behaviour is tested elsewhere, through the command or the service that uses it
(a click command through the real CLI, a SLURM module on the test cluster), is named in
``tests/layout_map.txt`` with those test files and why. The modules of the rooms being
reorganised (runners/local, toolkit, supervision) wait in ``tests/layout_pending.txt``, which
only shrinks: an entry whose mirrored file exists, or that names a module of another room,
fails here.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PENDING_ROOMS = ("smmpi/runners/local/", "smmpi/toolkit/", "smmpi/supervision/")


def modules() -> list[str]:
    """Every module of the package (``__init__.py`` files hold no behaviour of their own)."""
    found = (ROOT / "smmpi").rglob("*.py")
    return sorted(p.relative_to(ROOT).as_posix() for p in found if p.name != "__init__.py")


def mirrored(module: str) -> str:
    """``smmpi/a/b.py`` -> ``tests/a/test_b.py``."""
    folder, _, name = module.removeprefix("smmpi/").rpartition("/")
    return "/".join(part for part in ("tests", folder, f"test_{name}") if part)


def _entries(name: str) -> list[list[str]]:
    """The words of each line of ``tests/NAME`` (``#`` starts a comment)."""
    lines = (ROOT / "tests" / name).read_text(encoding="utf-8").splitlines()
    return [words for line in lines if (words := line.partition("#")[0].split())]


def mapped() -> dict[str, tuple[list[str], str]]:
    """``layout_map.txt``: module -> (its test files, why they are not the mirrored one)."""
    out: dict[str, tuple[list[str], str]] = {}
    for line in (ROOT / "tests" / "layout_map.txt").read_text(encoding="utf-8").splitlines():
        text, _, why = line.partition("#")
        if not text.strip():
            continue
        module, arrow, *tests = text.split()
        assert arrow == "->" and tests and why.strip(), f"layout_map.txt: {line!r}"
        assert module not in out, f"layout_map.txt names {module} twice"
        out[module] = (tests, why.strip())
    return out


def pending() -> list[str]:
    return [words[0] for words in _entries("layout_pending.txt")]


def test_the_mirror_rule_names_the_file() -> None:
    assert mirrored("smmpi/api.py") == "tests/test_api.py"
    assert mirrored("smmpi/serve/jobs.py") == "tests/serve/test_jobs.py"
    assert mirrored("smmpi/instances/hosts/pod.py") == "tests/instances/hosts/test_pod.py"


def test_every_module_has_its_mirrored_tests_or_a_documented_place() -> None:
    known = set(mapped()) | set(pending())
    missing = [m for m in modules() if not (ROOT / mirrored(m)).is_file() and m not in known]
    assert not missing, "modules without tests/<path>/test_<name>.py:\n" + "\n".join(
        f"{m} -> {mirrored(m)}" for m in missing
    )


def test_the_map_names_real_modules_and_test_files_and_no_mirrored_one() -> None:
    for module, (tests, _why) in mapped().items():
        assert (ROOT / module).is_file(), f"layout_map.txt: no module {module}"
        assert not (ROOT / mirrored(module)).is_file(), f"{module} has {mirrored(module)} now"
        for test in tests:
            assert test.startswith("tests/") and (ROOT / test).is_file(), f"{module}: no {test}"
        assert not module.startswith(PENDING_ROOMS), f"{module}: in layout_pending.txt"


def test_the_pending_list_only_shrinks() -> None:
    for module in pending():
        assert module.startswith(PENDING_ROOMS), f"layout_pending.txt: {module} is not pending"
        assert (ROOT / module).is_file(), f"layout_pending.txt: no module {module}"
        assert not (ROOT / mirrored(module)).is_file(), (
            f"{module} has {mirrored(module)}: take it off layout_pending.txt"
        )
