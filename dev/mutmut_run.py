"""`mutmut` whose mutants try their function's earlier killers first, and whose recorded equivalents
are not run again.

A mutant's session collects every module of the tests that cover its function (up to 25 modules and
500 tests for the token and sign-in code) before it runs the first, and collecting was most of the
time of a mutant killed at once. Most mutants of a function die by a test that killed its siblings
(tests/helpers/mutation_order.py records each kill), so those few run first, alone; only a mutant
they leave alive pays for the full list, which then runs without them. Whether a mutant dies does not
change: a survivor has run every test that covers it.

A mutant dev/mutation-equivalents.toml records as equivalent (by its file and its exact changed line)
counts as a survivor without running: it survives every test by definition, and running the hundreds
of tests that cover it was a third of a run. `MUTATION_RUN_EQUIVALENTS=1` runs them as well, to see
that each still survives (a record that no longer matches its line runs anyway).

Use it as mutmut: `python -m dev.mutmut_run run [names]`.
"""

import os
import sys
from collections.abc import Iterable
from pathlib import Path

from mutmut.__main__ import cli
from mutmut.runners.harness import PytestRunner

from dev.mutation import changed, reason_for, reasons

NO_TESTS_COLLECTED = 5
SURVIVED = 0
RECORDED = [] if os.environ.get("MUTATION_RUN_EQUIVALENTS") == "1" else reasons()
_run_tests = PytestRunner.run_tests


def run_tests(self, *, mutant_name: str | None, tests: Iterable[str]) -> int:
    """Run `tests` against the mutant, the function's earlier killers first and alone."""
    tests = list(tests)
    if not mutant_name:
        return _run_tests(self, mutant_name=mutant_name, tests=tests)
    try:
        if RECORDED and reason_for(changed(mutant_name), RECORDED):
            return SURVIVED
        first = _earlier_killers(mutant_name, tests)
    except Exception:  # mutmut's child would exit 1 on it, a kill no test made: run them all instead
        first = []
    if first:
        exit_code = _run_tests(self, mutant_name=mutant_name, tests=first)
        if exit_code == NO_TESTS_COLLECTED:
            return _run_tests(self, mutant_name=mutant_name, tests=tests)
        if exit_code != SURVIVED or len(first) == len(tests):
            return exit_code
        tests = [test for test in tests if test not in first]
    return _run_tests(self, mutant_name=mutant_name, tests=tests)


def _earlier_killers(mutant_name: str, tests: list[str]) -> list[str]:
    """Those of `tests` that killed other mutants of the mutant's function earlier in this run."""
    # Imported here, as pytest imported it from mutants/: importing it sooner, from the top, would
    # make pytest take the top's `tests` package for the one in mutants/.
    from tests.helpers.mutation_order import killers

    kills = killers(mutant_name, Path("mutants"))
    return [test for test in tests if test in kills]


PytestRunner.run_tests = run_tests

if __name__ == "__main__":
    sys.exit(cli())
