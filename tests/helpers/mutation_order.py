"""Pytest plugin for `make mutation`: run each mutant's tests fastest module first, fastest test first.

mutmut runs every test that covers the mutated function, stopping at the first failure (`-x`), in
whatever order a set of names gives. A mutant a 5 ms test kills used to wait behind a module of
full sign-ins. The order changes when a mutant dies, never whether it does: a survivor still runs
every test. Modules stay together, so a module's fixtures are set up once, as in a plain run.
"""

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
