"""What a Redis failover cost, measured from the outside: the error window, failed answers by status, the
acknowledged writes lost by kind, the users signed out and the time back to full throughput. Written to
.reports/failover.md (one row per failover) by the failover tests and `make failover`."""

import os
import statistics
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import requests

from app.store.replicas import ConfirmedWrites
from tests.helpers.failover_traffic import TIMEOUT, Answer, Traffic
from tests.helpers.settings import CSRF

ROOT = Path(__file__).resolve().parent.parent.parent
REPORT = Path(os.environ.get("FAILOVER_REPORT", ROOT / ".reports" / "failover.md"))
COOLDOWN = "poke on cooldown"
FULL = 0.8  # "full throughput": this share of the successful answers per second before the failover
BASELINE = 2.0  # the seconds before the event whose throughput is the baseline


@dataclass(frozen=True)
class Figures:
    name: str
    failover_s: float  # the event (kill, CLUSTER FAILOVER) to the replica serving as master
    first_error_s: float | None  # from the event
    last_error_s: float | None  # from the event, the end of the last failed answer
    answers: int
    failed: dict  # status ("no answer" for none) -> count
    pokes: tuple[int, int]  # lost, acknowledged
    sessions: tuple[int, int]  # signed out, signed in during the run
    refreshed_sessions: tuple[int, int]  # signed out, sessions refreshing throughout
    refreshes: int  # at the provider, during the run
    back_to_full_s: float | None  # from the event
    slowest_s: float
    unconfirmed: dict  # write kind -> answered without a replica's confirmation (the app's own count)
    gap_s: float | None = None  # as measured, from cutting off the replica to killing the master

    @property
    def signed_out(self) -> int:
        return self.sessions[0] + self.refreshed_sessions[0]

    def row(self) -> str:
        failed = ", ".join(f"{count} x {status}" for status, count in sorted(self.failed.items(), key=str)) or "none"
        window = (
            f"{self.first_error_s:+.2f} s to {self.last_error_s:+.2f} s"
            if self.first_error_s is not None
            else "no error"
        )
        back = f"{self.back_to_full_s:.1f} s" if self.back_to_full_s is not None else "not within the run"
        unconfirmed = ", ".join(f"{count} {write}" for write, count in sorted(self.unconfirmed.items()) if count)
        gap = f"{self.gap_s * 1000:.0f} ms" if self.gap_s is not None else "-"
        return (
            f"| {self.name} | {gap} | {self.failover_s:.2f} s | {window} | {self.answers} | {failed} | "
            f"{self.pokes[0]} of {self.pokes[1]} | {self.sessions[0]} of {self.sessions[1]} | "
            f"{self.refreshed_sessions[0]} of {self.refreshed_sessions[1]} ({self.refreshes} refreshes) | "
            f"{self.signed_out} | {back} | {self.slowest_s:.2f} s | {unconfirmed} |"
        )


HEADER = (
    "| failover | cut to kill | failover time | error window (from the event) | answers | failed, by status | "
    "pokes lost | new sessions lost | refreshing sessions signed out | users signed out | back to full throughput | "
    "slowest answer | answered unconfirmed (the event to 0.5 s after it) |\n"
    "|---|---|---|---|---|---|---|---|---|---|---|---|---|\n"
)


def measure(
    name: str, traffic: Traffic, *, event: float, done: float, refreshes: int, unconfirmed: dict, gap: float | None
) -> Figures:
    """The figures of one failover whose load has stopped; checks every acknowledged write from the outside
    (re-pokes, and a call per session that needs a refresh by now)."""
    failed = [answer for answer in traffic.answers if not answer.ok]
    return Figures(
        name=name,
        failover_s=done - event,
        first_error_s=min(a.started for a in failed) - event if failed else None,
        last_error_s=max(a.ended for a in failed) - event if failed else None,
        answers=len(traffic.answers),
        failed=dict(Counter("no answer" if a.status is None else a.status for a in failed)),
        pokes=(lost_pokes(traffic), len(traffic.pokes)),
        sessions=(signed_out(traffic.base_url, traffic.new_sessions), len(traffic.new_sessions)),
        refreshed_sessions=(signed_out(traffic.base_url, traffic.sessions), len(traffic.sessions)),
        refreshes=refreshes,
        back_to_full_s=back_to_full(traffic.answers, event=event, done=done),
        slowest_s=max(a.ended - a.started for a in traffic.answers),
        unconfirmed=unconfirmed,
        gap_s=gap,
    )


def lost_pokes(traffic: Traffic) -> int:
    """How many acknowledged pokes can be repeated: each is sent again and must be refused as on cooldown."""

    def again(poke: tuple[str, str]) -> bool:
        poker, target = poke
        headers = {"Authorization": f"Bearer {traffic.pokers[poker]}"}
        answer = requests.post(
            f"{traffic.base_url}/api/v1/pokes", json={"username": target}, headers=headers, timeout=TIMEOUT
        )
        assert answer.status_code in (200, 400), (answer.status_code, answer.text)
        assert answer.status_code == 200 or answer.json()["error"].startswith(COOLDOWN), answer.text
        return answer.status_code == 200

    with ThreadPoolExecutor(8) as pool:
        return sum(pool.map(again, traffic.pokes))


def signed_out(base_url: str, sessions: list[requests.Session]) -> int:
    """How many of `sessions` are no longer signed in: an API call (refreshing tokens that need it) and
    GET /auth/session must both know the user."""

    def gone(browser: requests.Session) -> bool:
        own = requests.get(f"{base_url}/api/v1/me/profile", cookies=browser.cookies, headers=CSRF, timeout=TIMEOUT)
        assert own.status_code in (200, 401), (own.status_code, own.text)
        current = requests.get(f"{base_url}/auth/session", cookies=browser.cookies, timeout=TIMEOUT)
        assert current.status_code == 200, (current.status_code, current.text)
        return own.status_code == 401 or not current.json()["authenticated"]

    with ThreadPoolExecutor(8) as pool:
        return sum(pool.map(gone, sessions))


def back_to_full(answers: list[Answer], *, event: float, done: float) -> float | None:
    """Seconds from the event to the first second after the failover with FULL of the baseline's successes."""
    successes = sorted(answer.ended for answer in answers if answer.ok)
    baseline = sum(event - BASELINE <= t < event for t in successes) / BASELINE
    start = done
    while start + 1 <= successes[-1]:
        if sum(start <= t < start + 1 for t in successes) >= FULL * baseline:
            return start - event
        start += 0.1
    return None


def write(figures: list[Figures], title: str) -> str:
    """The figures as a Markdown table under `title`, added to REPORT; the table."""
    table = f"\n## {title}\n\n{HEADER}" + "".join(f"{f.row()}\n" for f in figures)
    REPORT.parent.mkdir(parents=True, exist_ok=True)
    with REPORT.open("a") as report:
        report.write(table)
    return table


WAIT_TIMEOUT_MS = 100  # REDIS_WAIT_TIMEOUT_MS's default


def wait_cost(master, key: str, writes: int = 500) -> dict:
    """What confirming costs one write, in µs: the median and p99 of a SET on `key` through
    app.store.replicas without a wait and with `WAIT 1 100` after it, in turns, on `master` (a client of the
    key's master, which has a replica); AssertionError if a replica left more than 1 % unconfirmed (a busy
    machine can hold a replica past 100 ms now and then: one of 500 was, once, in CI)."""
    unconfirmed = []
    writers = {
        "alone": ConfirmedWrites(master, timeout_ms=0),
        "confirmed": ConfirmedWrites(master, timeout_ms=WAIT_TIMEOUT_MS, on_unconfirmed=unconfirmed.append),
    }
    times = {name: [] for name in writers}
    waits = _wait_calls(master)
    for n in range(writes):
        for name, writer in writers.items():
            started = time.perf_counter()
            writer.execute("poke", key, [("SET", key, n, "PX", 60_000)])
            times[name].append((time.perf_counter() - started) * 1e6)
    assert len(unconfirmed) <= writes // 100, f"{len(unconfirmed)} of {writes} writes not confirmed"
    assert _wait_calls(master) - waits == writes, "not one WAIT per confirmed write"
    return {
        name: (statistics.median(values), statistics.quantiles(values, n=100)[98]) for name, values in times.items()
    }


def _wait_calls(client) -> int:
    return client.info("commandstats").get("cmdstat_wait", {}).get("calls", 0)


def write_cost(costs: dict[str, dict], title: str) -> str:
    """The costs of wait_cost() by deployment as a Markdown table under `title`, added to REPORT."""
    rows = "".join(
        f"| {name} | {c['alone'][0]:.0f} / {c['alone'][1]:.0f} µs | "
        f"{c['confirmed'][0]:.0f} / {c['confirmed'][1]:.0f} µs | +{c['confirmed'][0] - c['alone'][0]:.0f} µs |\n"
        for name, c in costs.items()
    )
    table = (
        f"\n## {title}\n\n| deployment | write alone (median / p99) | confirmed with WAIT (median / p99) | "
        f"WAIT adds (median) |\n|---|---|---|---|\n{rows}"
    )
    REPORT.parent.mkdir(parents=True, exist_ok=True)
    with REPORT.open("a") as report:
        report.write(table)
    return table
