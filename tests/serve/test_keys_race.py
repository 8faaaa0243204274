"""serve's key pair on a new state folder, made by two processes at once (a serve starting
and `smmpi serve --env` asking for it): both end up with the one pair on disk."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

from smmpi.serve.state import Keys, load_keys, read_json


def _load(
    folder: str, barrier: multiprocessing.synchronize.Barrier, out: multiprocessing.Queue[Keys]
) -> None:
    barrier.wait()
    out.put(load_keys(Path(folder)))


def test_processes_making_the_keys_at_once_all_get_the_pair_on_disk(tmp_path: Path) -> None:
    context = multiprocessing.get_context("fork")
    for attempt in range(5):
        folder = tmp_path / str(attempt)
        folder.mkdir(mode=0o700)
        barrier, out = context.Barrier(6), context.Queue()
        procs = [context.Process(target=_load, args=(str(folder), barrier, out)) for _ in range(6)]
        for proc in procs:
            proc.start()
        got = {out.get(timeout=30) for _ in procs}
        for proc in procs:
            proc.join(timeout=30)
        kept = read_json(folder / "credentials.json")
        assert got == {Keys(kept["access_key"], kept["secret_key"])}
        assert sorted(p.name for p in folder.iterdir()) == ["credentials.json"]  # no temp file
