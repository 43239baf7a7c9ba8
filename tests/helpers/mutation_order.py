"""Pytest plugin for `make mutation`: each mutant's tests in the order likeliest to kill it soonest,
and no garbage collection of what mutmut's process held before the fork.

mutmut runs every test that covers the mutated function, stopping at the first failure (`-x`), in
whatever order a set of names gives. First come the tests that killed other mutants of the same
function earlier in this run (each kill is written to `mutation-kills.jsonl`, most kills first):
a function's mutants mostly die by the same few tests, which may sit behind hundreds of sign-ins.
Then the rest, fastest module first and fastest test first, so modules stay together and a module's
fixtures are set up once, as in a plain run. The order changes when a mutant dies, never whether it
does: a survivor still runs every test.

Each mutant runs in a process forked from mutmut's, which holds every test module and the stats;
pytest collects garbage twice at the end of each run (to report unraisable exceptions), and walking
that inherited heap took about half of a run killed by its first test. Freezing it leaves the
collections to what the mutant's own run made, whose unraisable exceptions are still reported.
"""

import gc
import json
import os
from collections import Counter, defaultdict
from pathlib import Path

import pytest

# mutmut runs the tests from mutants/, where it writes its stats and where the kills are kept
STATS = Path("mutmut-stats.json")
KILLS = Path("mutation-kills.jsonl")
MUTANT_MARK = "__mutmut_"
_durations: dict[str, float] | None = None


def _test_durations() -> dict[str, float]:
    """Each test's duration as mutmut measured it; empty before mutmut has measured them."""
    global _durations
    if _durations is None and STATS.exists():  # not kept before: mutmut measures, then writes the file
        _durations = json.loads(STATS.read_text())["duration_by_test"]
    return _durations or {}


def _mutant() -> str | None:
    """The mutant this run tests, or None outside a mutant's run (stats, the clean run)."""
    name = os.environ.get("MUTANT_UNDER_TEST", "")
    return name if MUTANT_MARK in name else None


def killers(mutant: str, directory: Path = Path()) -> Counter:
    """How many mutants of `mutant`'s function each test has killed so far in this run."""
    kills = directory / KILLS
    if not kills.exists():
        return Counter()
    function = mutant.rsplit(MUTANT_MARK, 1)[0]
    prefix = json.dumps(function + MUTANT_MARK)[:-1]  # the start of a line naming one of its mutants
    with kills.open(encoding="utf-8") as lines:
        return Counter(json.loads(line)[1] for line in lines if line.startswith("[" + prefix))


def pytest_configure(config):
    """In a mutant's run, keep the inherited heap out of the garbage collector's walks."""
    if _test_durations():
        gc.freeze()


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items):
    """Order the items: earlier killers of this function, then by module and by each test's time."""
    durations = _test_durations()
    mutant = _mutant()
    if not durations or mutant is None:
        return
    kills = killers(mutant)
    first = sorted((item for item in items if item.nodeid in kills), key=lambda i: -kills[i.nodeid])
    by_module = defaultdict(list)
    for item in items:
        if item.nodeid not in kills:
            by_module[item.nodeid.split("::", 1)[0]].append(item)
    modules = sorted(by_module.values(), key=lambda module: sum(durations.get(i.nodeid, 0.0) for i in module))
    items[:] = first + [
        item for module in modules for item in sorted(module, key=lambda i: durations.get(i.nodeid, 0.0))
    ]


def pytest_runtest_logreport(report):
    """Remember which test killed this run's mutant (one line, appended whole, per kill)."""
    mutant = _mutant()
    if report.failed and mutant is not None:
        line = json.dumps([mutant, report.nodeid]) + "\n"
        fd = os.open(KILLS, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line.encode())
        finally:
            os.close(fd)
