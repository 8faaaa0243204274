"""The failure file's capture stays bounded on a chatty failing run."""

from __future__ import annotations

from smmpi.toolkit.failure import MAX_LINES, Capture, error_message


def test_capture_keeps_at_most_max_lines_from_the_first_error() -> None:
    capture = Capture(["ExecuteUserScriptError"])
    capture.feed("[1,0]<stdout>:before any error")
    capture.feed("[1,0]<stderr>:ValueError: x")
    for i in range(3 * MAX_LINES):
        capture.feed(f"[1,0]<stdout>:line {i}")
    assert len(capture.kept) == MAX_LINES
    assert capture.kept[0] == "ValueError: x\n"
    assert "before any error" not in error_message([capture])
