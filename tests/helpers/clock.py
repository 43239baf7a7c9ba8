"""Time a test decides, not the machine: a clock moved by hand for the app modules that read `time`,
and a bound on calls that must not hang.

Tests whose verdict hangs on wall-clock time (a Timer firing before a waiter gives up, a cache still
fresh 0.3 s later, a call answered within 0.1 s) pass or fail with the machine's load. That makes them
kill mutants by chance under mutmut, which runs two mutants at a time on a busy machine."""

import threading
import time as real_time
from collections.abc import Callable


class FakeClock:
    """Stands in for the `time` module of one app module (`monkeypatch.setattr(module, "time", clock)`):
    time() and monotonic() stand still until the test calls advance() or the code under test sleeps,
    and sleep() returns at once, having moved the clock. `at(delay, action, *args)` runs an action
    once the clock has moved `delay` seconds on: what another request or instance does while the code
    waits, in a fixed order, with no thread. `slept` lists every sleep the code asked for; `on_sleep`,
    when set, runs at the start of each sleep (to let a thread of the test move on first)."""

    def __init__(self, start: float | None = None):
        self._wall = real_time.time() if start is None else start
        self._mono = 1_000.0
        self._due: list[tuple[float, Callable, tuple]] = []
        self.slept: list[float] = []
        self.on_sleep: Callable[[], object] | None = None

    def time(self) -> float:
        return self._wall

    def monotonic(self) -> float:
        return self._mono

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        if self.on_sleep is not None:
            self.on_sleep()
        self.advance(seconds)

    def advance(self, seconds: float) -> None:
        self._wall += seconds
        self._mono += seconds
        for entry in [entry for entry in self._due if entry[0] <= self._mono]:
            self._due.remove(entry)
            entry[1](*entry[2])

    def at(self, delay: float, action: Callable, *args) -> None:
        self._due.append((self._mono + delay, action, args))


def finishes_within(seconds: float, call: Callable):
    """What `call()` returns (or raises), run in a thread the test gives up on after `seconds`: a call
    that hangs fails the test by assertion, instead of stalling the run until an outer timeout."""
    outcome: dict = {}

    def run():
        try:
            outcome["value"] = call()
        except BaseException as error:  # handed to the test's thread below
            outcome["error"] = error

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(seconds)
    assert not worker.is_alive(), f"still waiting after {seconds} s"
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]
