"""Pytest plugin for `make mutation`: each mutant's tests fastest module first, fastest test first,
and no garbage collection of what mutmut's process held before the fork.

mutmut runs every test that covers the mutated function, stopping at the first failure (`-x`), in
whatever order a set of names gives. A mutant a 5 ms test kills used to wait behind a module of
full sign-ins. The order changes when a mutant dies, never whether it does: a survivor still runs
every test. Modules stay together, so a module's fixtures are set up once, as in a plain run.

Each mutant runs in a process forked from mutmut's, which holds every test module and the stats;
pytest collects garbage twice at the end of each run (to report unraisable exceptions), and walking
that inherited heap took about half of a run killed by its first test. Freezing it leaves the collections to what
the mutant's own run made, whose unraisable exceptions are still reported.
"""

import gc
import json
from collections import defaultdict
from pathlib import Path

import pytest

STATS = Path("mutmut-stats.json")  # mutmut runs the tests from mutants/, where it writes its stats
_durations: dict[str, float] | None = None


def _test_durations() -> dict[str, float]:
    """Each test's duration as mutmut measured it; empty before mutmut has measured them."""
    global _durations
    if _durations is None and STATS.exists():  # not kept before: mutmut measures, then writes the file
        _durations = json.loads(STATS.read_text())["duration_by_test"]
    return _durations or {}


def pytest_configure(config):
    """In a mutant's run, keep the inherited heap out of the garbage collector's walks."""
    if _test_durations():
        gc.freeze()


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items):
    """Order the items by module (least total time first), then by each test's own time."""
    durations = _test_durations()
    if not durations:
        return
    by_module = defaultdict(list)
    for item in items:
        by_module[item.nodeid.split("::", 1)[0]].append(item)
    modules = sorted(by_module.values(), key=lambda module: sum(durations.get(i.nodeid, 0.0) for i in module))
    items[:] = [item for module in modules for item in sorted(module, key=lambda i: durations.get(i.nodeid, 0.0))]
