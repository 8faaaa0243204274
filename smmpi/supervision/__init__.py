"""Watching a run's processes, in every mode: how each rank ended, and the run's verdict.

``watch`` is the run's reaper and each rank's watcher (run by path), ``rank_hook`` every
rank's ``sitecustomize.py`` (copied, not imported), ``tree`` the process tree, ``exits`` and
``rank_records`` what ranks recorded and the words for each cause, ``verdict`` the failed
rank named (rank, host, cause), ``hangs`` and ``output`` what a run printed and where it
stopped, ``cpu_share`` and ``room`` the run's CPU group and disk room. Runners use these
rooms; they use no runner.
"""
