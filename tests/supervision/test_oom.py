"""The OOM kills of smmpi's memory cgroup, read where the kernel keeps them."""

from __future__ import annotations

from pathlib import Path

from smmpi.causes import say
from smmpi.supervision import oom
from smmpi.supervision.exits import Ends
from smmpi.supervision.rank_records import RankEnd


def test_the_count_files_of_cgroup_v2_and_v1() -> None:
    own = "0::/user.slice/run\n4:memory:/process_api/abc\n3:cpuset:/\n"
    assert oom._files(own) == [
        Path("/sys/fs/cgroup/user.slice/run/memory.events"),
        Path("/sys/fs/cgroup/memory/process_api/abc/memory.oom_control"),
    ]


def test_this_processs_count_is_read_from_its_own_cgroup() -> None:
    own = Path("/proc/self/cgroup").read_text(encoding="ascii")
    readable = [f for f in oom._files(own) if f.is_file()]
    count = oom.oom_kills()
    assert (count is None) == (not readable)
    if readable:  # the first readable file's count
        text = readable[0].read_text(encoding="ascii")
        assert f"oom_kill {count}" in text.splitlines()


def test_a_sigkill_while_the_count_grew_is_an_oom_kill() -> None:
    ends = Ends(ends={0: RankEnd(0, 3, None, 1.0), 1: RankEnd(1, None, 9, 0.5)})
    now = oom.oom_kills()
    if now is None:  # nothing to read: the words stay unsure
        assert oom.with_oom_kills(ends, 0) is ends
        return
    grew = oom.with_oom_kills(ends, now - 1)
    assert grew.ends[1].oom_kills == 1 and grew.ends[0].oom_kills is None
    blame = grew.blame()
    assert blame is not None and (blame.rank, blame.phrase) == (1, say("oom-kill"))
    same = oom.with_oom_kills(ends, now).blame()
    assert same is not None and same.phrase == say("sigkill")
    assert oom.with_oom_kills(ends, None) is ends  # no count at the start: unknown
