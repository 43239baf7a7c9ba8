"""Bearer API calls while the identity provider hangs: the provider holds every token call, several
browser sessions refresh at once, and bearer calls to /api/v1/me/profile must keep flowing.

Used by tests/integration/test_provider_hang.py (shipped gunicorn config) and, to compare worker
configs, `python -m bench.studies.hang [gunicorn options...]`, which starts everything itself.
"""

import statistics
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import requests

from bench.studies.stack import served
from dev import oidc_driver

SESSIONS = 8
DELAY_MS = 5000
CALLERS = 4
SHORT_CLIENT = "profile-poke-web-short"  # 62 s tokens: a refresh is due 2 s after sign-in
REFRESH_DUE_AFTER = 2.5


def sign_in(base_url: str, username: str, password: str = "demo") -> requests.Session:
    """A requests session signed in to the app at `base_url` through its real redirects."""
    http = requests.Session()
    start = http.get(f"{base_url}/auth/login", allow_redirects=False, timeout=10)
    callback = oidc_driver.login_at_idp(http, start.headers["Location"], username, password)
    done = http.get(callback, allow_redirects=False, timeout=10)
    if done.status_code != 302:
        raise RuntimeError(f"sign-in failed: {done.status_code}")
    return http


def percentile(values: list[float], fraction: float) -> float:
    """The nearest-rank percentile of `values`."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(fraction * len(ordered)) - 1))]


def bearer_calls_while_refreshes_hang(app_url: str, idp_base: str, sessions: list, bearer: str) -> dict:
    """With every token call held DELAY_MS, one cookie call per session (each due a refresh) at once,
    and bearer calls from CALLERS threads until the last cookie call answered. Returns the bearer
    latencies (ms) and statuses, and each cookie call's status and duration (s)."""
    done = threading.Event()
    latencies, statuses, lock = [], [], threading.Lock()

    def call_bearer() -> None:
        with requests.Session() as http:
            while not done.is_set():
                started = time.perf_counter()
                status = http.get(
                    f"{app_url}/api/v1/me/profile", headers={"Authorization": f"Bearer {bearer}"}, timeout=30
                ).status_code
                with lock:
                    latencies.append((time.perf_counter() - started) * 1000)
                    statuses.append(status)

    def call_cookie(http: requests.Session) -> tuple[int, float]:
        started = time.perf_counter()
        status = http.get(f"{app_url}/api/v1/me/profile", headers={"X-CSRF": "1"}, timeout=30).status_code
        return status, time.perf_counter() - started

    oidc_driver.delay_token_endpoint(idp_base, DELAY_MS)
    try:
        with ThreadPoolExecutor(CALLERS + len(sessions)) as pool:
            bearers = [pool.submit(call_bearer) for _ in range(CALLERS)]
            cookies = [future.result() for future in [pool.submit(call_cookie, http) for http in sessions]]
            done.set()
            for future in bearers:
                future.result()
    finally:
        oidc_driver.delay_token_endpoint(idp_base, 0)
    return {
        "bearer_calls": len(latencies),
        "bearer_statuses": sorted(set(statuses)),
        "bearer_p50_ms": round(statistics.median(latencies), 1),
        "bearer_p99_ms": round(percentile(latencies, 0.99), 1),
        "bearer_max_ms": round(max(latencies), 1),
        "cookie_statuses": [status for status, _ in cookies],
        "cookie_seconds": [round(seconds, 2) for _, seconds in cookies],
    }


def prepare(app_url: str, idp: dict) -> tuple[list, str]:
    """SESSIONS browser sessions, each due a refresh now, and a bearer token already verified once
    (so its signing key is cached)."""
    names = ("alice", "bob", "carol")
    sessions = [sign_in(app_url, names[index % len(names)]) for index in range(SESSIONS)]
    bearer = oidc_driver.user_tokens(idp["issuer"], "profile-poke-web", f"{app_url}/auth/callback", "alice", "demo")[
        "access_token"
    ]
    headers = {"Authorization": f"Bearer {bearer}"}
    assert requests.get(f"{app_url}/api/v1/me/profile", headers=headers, timeout=10).status_code == 200
    time.sleep(REFRESH_DUE_AFTER)
    return sessions, bearer


def main(gunicorn_options: list[str]) -> None:
    """Start Redis, the provider and the app under `gunicorn_options`, run the check, print it."""
    settings = {"OIDC_CLIENT_ID": SHORT_CLIENT, "LOGIN_CLIENT_IDS": f"{SHORT_CLIENT},profile-poke-web"}
    with served("hang", gunicorn_options, **settings) as service:
        sessions, bearer = prepare(service.base, {"issuer": service.env["OIDC_ISSUER_URL"]})
        result = bearer_calls_while_refreshes_hang(service.base, service.idp_url, sessions, bearer)
        print(" ".join(gunicorn_options) or "(shipped default)", result)


if __name__ == "__main__":
    main(sys.argv[1:])
