"""MetricDefinitions applied to log lines (``smmpi.platform.metrics``), the one implementation
serve, ``submit --local`` and ``smmpi run`` share: values, batches, the series file."""

from __future__ import annotations

import io
import json
import threading
from pathlib import Path

import pytest

from smmpi.platform.metrics import SeriesFile, final_list, last_of, read_series
from smmpi.platform.run_metrics import RunMetrics

DEFINITIONS = [
    {"Name": "loss", "Regex": r"loss=(\S+)"},
    {"Name": "bare", "Regex": r"[0-9]+ items"},  # no group: the whole match, here no number
    {"Name": "lr", "Regex": r"lr: *([-+0-9.e]+)"},
]


def test_each_regexs_first_group_is_a_value_when_it_is_a_finite_number(tmp_path: Path) -> None:
    series = SeriesFile(DEFINITIONS, tmp_path / "s.jsonl")
    lines = ["loss=0.5 lr: 1e-3", "loss=nan", "loss=inf", "loss=-inf", "loss=abc", "12 items",
             "loss=2", "lr:  +2.5"]  # fmt: skip
    for i, line in enumerate(lines):
        series.add("algo-1" if i < 5 else "algo-2", line, 100.0 + i)
    series.flush()
    found = read_series(tmp_path / "s.jsonl")
    assert found == {"loss": [(100.0, 0.5), (106.0, 2.0)], "lr": [(100.0, 0.001), (107.0, 2.5)]}
    assert read_series(tmp_path / "s.jsonl", "algo-2") == {"loss": [(106.0, 2.0)],
                                                          "lr": [(107.0, 2.5)]}  # fmt: skip
    assert (
        series.last
        == {"loss": (2.0, 106.0), "lr": (2.5, 107.0)}
        == {m: (p[-1][1], p[-1][0]) for m, p in found.items()}
    )
    assert series.hosts == {"loss": ["algo-1", "algo-2"], "bare": [], "lr": ["algo-1", "algo-2"]}
    first = json.loads((tmp_path / "s.jsonl").read_text().splitlines()[0])
    assert first == {"t": 100.0, "h": "algo-1", "m": {"loss": "0.5", "lr": "1e-3"}}  # as logged


def test_last_values_keep_the_definitions_order_whichever_line_comes_first(
    tmp_path: Path,
) -> None:
    """Two ranks' lines arrive in either order: the final list (and `smmpi status`) does not."""
    series = SeriesFile(DEFINITIONS, tmp_path / "s.jsonl")
    series.add("algo-2", "lr: 0.1", 1.0)
    series.add("algo-1", "loss=0.5", 2.0)
    series.flush()
    assert final_list(dict(series.last)) == [
        {"MetricName": "loss", "Value": 0.5, "Timestamp": 2.0},
        {"MetricName": "lr", "Value": 0.1, "Timestamp": 1.0},
    ]


def test_queued_lines_are_written_within_the_flush_delay_without_a_flush(tmp_path: Path) -> None:
    flushed = threading.Event()
    series = SeriesFile(DEFINITIONS, tmp_path / "s.jsonl", flushed.set)
    series.add("algo-1", "loss=0.25", 1.0)
    assert flushed.wait(60), "the timer never wrote the queued line"
    assert read_series(tmp_path / "s.jsonl") == {"loss": [(1.0, 0.25)]}


def test_the_series_file_is_never_written_through_a_link(tmp_path: Path) -> None:
    theirs = tmp_path / "theirs.txt"
    theirs.write_text("not smmpi's")
    (tmp_path / "s.jsonl").symlink_to(theirs)
    series = SeriesFile(DEFINITIONS, tmp_path / "s.jsonl")
    series.add("algo-1", "loss=1", 1.0)
    with pytest.raises(OSError):
        series.flush()
    assert theirs.read_text() == "not smmpi's"
    assert read_series(tmp_path / "s.jsonl") == {}  # a link is not read either


def test_a_series_file_of_one_point_a_line_is_read_too(tmp_path: Path) -> None:
    path = tmp_path / "old.jsonl"
    path.write_text('{"m": "loss", "v": 0.5, "t": 3.0, "h": "algo-1"}\n{"m": "loss", "v"\n')
    assert read_series(path) == {"loss": [(3.0, 0.5)]}  # the cut line is skipped
    assert last_of(read_series(path)) == {"loss": (0.5, 3.0)}


def test_a_runs_output_is_matched_line_by_line_across_writes(tmp_path: Path) -> None:
    metrics = RunMetrics(DEFINITIONS, tmp_path / "metrics.jsonl")
    echo = io.StringIO()
    stream = metrics.stream(echo)
    for part in ("[1,mpirank:0,algo-1]<stdout>:lo", "ss=0.75\n[1,mpirank:1,algo-2]<stdout>:lr: 3",
                 "\nloss=0.5 (no newline yet)"):  # fmt: skip
        stream.write(part)
    assert echo.getvalue().endswith("(no newline yet)")  # echoed as written
    final = {m["MetricName"]: m["Value"] for m in metrics.final()}
    assert final == {"loss": 0.75, "lr": 3.0}  # an unfinished line is not a line yet
    assert read_series(tmp_path / "metrics.jsonl")["loss"][0][1] == 0.75


def test_without_definitions_the_output_stream_is_left_as_it_is(tmp_path: Path) -> None:
    echo = io.StringIO()
    metrics = RunMetrics((), tmp_path / "metrics.jsonl")
    assert metrics.stream(echo) is echo
    assert metrics.final() == []
    assert not (tmp_path / "metrics.jsonl").exists()


def test_a_regex_pythons_re_cannot_take_is_named_and_the_others_still_apply(
    tmp_path: Path,
) -> None:
    from smmpi.platform.run_metrics import record_final

    java = {"Name": "java", "Regex": r"loss=(?<v>[0-9.]+)"}  # a named group in Java's syntax
    metrics = RunMetrics([java, DEFINITIONS[0]], tmp_path / "metrics.jsonl")
    metrics.feed(["loss=0.5"], 1.0)
    record: dict[str, object] = {"TrainingJobName": "from-a-job"}
    assert record_final(record, metrics) == [
        "smmpi: metric 'java' was not applied here: its Regex is not one Python's re takes",
        "smmpi: metrics loss 0.5 (smmpi metrics from-a-job)",
    ]
    assert record["FinalMetricDataList"] == [{"MetricName": "loss", "Value": 0.5, "Timestamp": 1.0}]


def test_a_timed_write_that_fails_loses_points_not_values_nor_raises(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    raised: list[object] = []
    monkeypatch.setattr(threading, "excepthook", raised.append)
    series = SeriesFile(DEFINITIONS, tmp_path / "gone" / "s.jsonl")  # (its folder went)
    series.add("algo-1", "loss=0.5", 1.0)
    timer = series.timer
    assert timer is not None
    timer.join(60)
    assert not timer.is_alive() and not series.queue
    assert raised == []  # no thread's traceback
    assert series.last == {"loss": (0.5, 1.0)}
