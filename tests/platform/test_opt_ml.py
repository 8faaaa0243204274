"""Processes mode notices writes under a literal /opt/ml, and removes only what the run created."""

from __future__ import annotations

from pathlib import Path

from smmpi.platform.opt_ml import OptMlWatch


def test_created_by_the_run_is_reported_and_removed(tmp_path: Path) -> None:
    root = tmp_path / "opt" / "ml"
    watch = OptMlWatch(root)
    (root / "model").mkdir(parents=True)
    (root / "model" / "model.txt").write_text("w")
    line = watch.finish()
    assert line is not None
    assert line.startswith(
        f"the ranks wrote 1 file(s) under this machine's {root} ({root}/model/model.txt), "
        "which this run created and has removed: in processes mode every emulated instance "
        "shares it"
    )
    assert not root.parent.exists()  # /opt did not exist either


def test_existing_tree_is_reported_never_removed(tmp_path: Path) -> None:
    root = tmp_path / "opt" / "ml"
    (root / "model").mkdir(parents=True)
    (root / "model" / "old.txt").write_text("theirs")
    (root / "model" / "same.txt").write_text("theirs")
    watch = OptMlWatch(root)
    (root / "model" / "old.txt").write_text("changed by a rank")
    (root / "model" / "new.txt").write_text("new")
    line = watch.finish()
    assert line is not None and line.startswith(
        f"the ranks wrote 2 file(s) under this machine's {root} ({root}/model/new.txt, ...): "
    )
    assert sorted(p.name for p in (root / "model").iterdir()) == ["new.txt", "old.txt", "same.txt"]


def test_untouched_or_absent_says_nothing(tmp_path: Path) -> None:
    assert OptMlWatch(tmp_path / "opt" / "ml").finish() is None
    (tmp_path / "ml").mkdir()
    (tmp_path / "ml" / "f").write_text("x")
    assert OptMlWatch(tmp_path / "ml").finish() is None
    assert (tmp_path / "ml" / "f").read_text() == "x"


def test_existing_parent_is_kept(tmp_path: Path) -> None:
    watch = OptMlWatch(tmp_path / "ml")
    (tmp_path / "ml").mkdir()
    assert watch.finish() is not None
    assert tmp_path.exists() and not (tmp_path / "ml").exists()
