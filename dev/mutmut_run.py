"""`mutmut` whose mutants try their function's earlier killers first, in a pytest session of their own.

A mutant's session collects every module of the tests that cover its function (up to 25 modules and
500 tests for the token and sign-in code) before it runs the first, and collecting was most of the
time of a mutant killed at once. Most mutants of a function die by a test that killed its siblings
(tests/helpers/mutation_order.py records each kill), so those few run first, alone; only a mutant
they leave alive pays for the full list, which then runs without them. Whether a mutant dies does not
change: a survivor has run every test that covers it.

Use it as mutmut: `python -m dev.mutmut_run run [names]`.
"""

import sys
from pathlib import Path

from mutmut.__main__ import cli
from mutmut.runners.harness import PytestRunner

NO_TESTS_COLLECTED = 5
_run_tests = PytestRunner.run_tests


def run_tests(self, *, mutant_name: str | None, tests) -> int:
    """Run `tests` against the mutant, the function's earlier killers first and alone."""
    tests = list(tests)
    kills = {}
    if mutant_name:
        # Imported here, as pytest imported it from mutants/: importing it sooner, from the top,
        # would make pytest take the top's `tests` package for the one in mutants/.
        from tests.helpers.mutation_order import killers

        kills = killers(mutant_name, Path("mutants"))
    first = [test for test in tests if test in kills]
    if first:
        exit_code = _run_tests(self, mutant_name=mutant_name, tests=first)
        if exit_code not in (0, NO_TESTS_COLLECTED) or len(first) == len(tests):
            return exit_code
        tests = [test for test in tests if test not in kills]
    return _run_tests(self, mutant_name=mutant_name, tests=tests)


PytestRunner.run_tests = run_tests

if __name__ == "__main__":
    sys.exit(cli())
