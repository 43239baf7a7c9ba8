"""No bound a flood from other networks can spend denies a legitimate user (issue 28, point 2, sign-in).

The app runs under gunicorn with the shipped config behind one trusted proxy hop (PROXY_HOPS=1), the
default sign-in rate limit, PAR on as the dev provider offers it, and a redis-server of its own with
32 MB and the recommended `noeviction`. Flood clients connect from many loopback addresses and name,
in X-Forwarded-For, 360 clients in 240 IPv4 /24 networks and in IPv6 /64s spread over 40 /48s and 120
/56s; each starts sign-ins up to and past its own limit, and sends junk callbacks with its login
cookies. Meanwhile a new browser starts and finishes a real sign-in. The flood starts more sign-ins
than MAX_PENDING_SIGNINS (10,000) used to admit before every start answered 503; now none is refused
but by its own client's limit, and Redis keeps nothing per attempt: the rate limiter's windows (one per
client and route, gone within a minute) and the new browser's sign-in are all that is new."""

import http.client
import re
import secrets
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests

from app.extensions import make_redis
from dev import oidc_driver
from dev.services import free_port, start_redis
from tests.helpers.floods import counted_under
from tests.helpers.real_services import PASSWORD, delete_prefix, integration_env, start_live_app, start_own_idp
from tests.helpers.settings import CSRF

# Its own single redis-server: the --redis-cluster pass would only run it again.
pytestmark = [pytest.mark.integration, pytest.mark.single_redis]

MAXMEMORY_MB = 32
LIMIT = 30  # RATE_LIMIT_LOGIN's default, per minute
OLD_BOUND = 10_000  # MAX_PENDING_SIGNINS, which any 34 addresses could keep full
JUNK_CALLBACKS = 3  # per flood client, each with a random well-formed state and the client's login cookies
METRICS_TOKEN = secrets.token_urlsafe(16)
IPV4 = [f"198.18.{index}.{index % 7 + 1}" for index in range(240)]  # 198.18.0.0/15 is for benchmarks
IPV6 = [f"2001:db8:{net48:x}:{net56:x}07::1" for net48 in range(40) for net56 in range(3)]  # one /64 a /56
CLIENTS = IPV4 + IPV6
assert len(CLIENTS) > OLD_BOUND // LIMIT + 8
BROWSER = "192.0.2.10"  # the new user, on a network of its own


@pytest.fixture(scope="module")
def flooded(workdir):
    """The app under gunicorn (2 workers), a dev provider and a small redis-server, all of their own."""
    redis_port, app_port = free_port(), free_port()
    redis_server = start_redis(
        redis_port,
        workdir=workdir / "flood-redis",
        extra_args=("--maxmemory", f"{MAXMEMORY_MB}mb", "--maxmemory-policy", "noeviction"),
    )
    redis_url = f"redis://127.0.0.1:{redis_port}/0"
    idp_server, idp = start_own_idp(workdir, [app_port])
    env = integration_env(
        idp, redis_url, PROXY_HOPS="1", RATE_LIMIT_LOGIN=f"{LIMIT} per minute", METRICS_TOKEN=METRICS_TOKEN
    )
    app_server, live = start_live_app(env, app_port, workdir, workers=2)
    yield live, make_redis(redis_url, socket_timeout=5)
    app_server.stop()
    idp_server.stop()
    delete_prefix(redis_url, env["REDIS_KEY_PREFIX"])
    redis_server.stop()


def flood_client(port: int, index: int, address: str) -> Counter:
    """One flood client: sign-in starts from `address` until one past its limit, then junk callbacks
    with the login cookies it was given; over a connection from a loopback address of its own."""
    source = (f"127.0.{index // 250}.{index % 250 + 2}", 0)
    answers, cookies = Counter(), []
    for _ in range(LIMIT + 1):
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30, source_address=source)
        connection.request("GET", "/auth/login?return_to=/" + "x" * 500, headers={"X-Forwarded-For": address})
        response = connection.getresponse()
        response.read()
        answers[f"login {response.status}"] += 1
        if response.status == 429:
            assert 0 < int(response.headers["Retry-After"]) <= 60
        cookies += [header.split(";")[0] for header in response.headers.get_all("Set-Cookie") or []]
        connection.close()
    for _ in range(JUNK_CALLBACKS):
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30, source_address=source)
        state = secrets.token_urlsafe(45)  # 60 characters, shaped like the app's states
        headers = {"X-Forwarded-For": address, "Cookie": "; ".join(cookies[-5:])}
        connection.request("GET", f"/auth/callback?state={state}&code=junk", headers=headers)
        response = connection.getresponse()
        response.read()
        answers[f"callback {response.status}"] += 1
        connection.close()
    return answers


def sign_in_during(live, started: threading.Event) -> tuple[int, dict, float]:
    """A new browser's real sign-in once the flood is under way: the callback's status, its session and
    how long the whole sign-in took."""
    started.wait(120)
    began = time.monotonic()
    browser = requests.Session()
    browser.headers["X-Forwarded-For"] = BROWSER
    start = browser.get(f"{live.url}/auth/login", params={"return_to": "/me"}, allow_redirects=False, timeout=30)
    assert start.status_code == 302, start.text
    callback = oidc_driver.login_at_idp(browser, start.headers["Location"], "bob", PASSWORD)
    done = browser.get(callback, allow_redirects=False, timeout=30)
    session = browser.get(f"{live.url}/auth/session", timeout=30).json()
    profile = browser.get(f"{live.url}/api/v1/me/profile", headers=CSRF, timeout=30)
    assert profile.status_code == 200, profile.text
    return done.status_code, session, time.monotonic() - began


def metric(live, name: str, **labels) -> float:
    """The value of one series of the app's /metrics (summed over workers)."""
    text = requests.get(f"{live.url}/metrics", headers={"Authorization": f"Bearer {METRICS_TOKEN}"}, timeout=10).text
    wanted = ",".join(f'{key}="{value}"' for key, value in sorted(labels.items()))
    found = re.search(rf"^{name}\{{{re.escape(wanted)}\}} (\S+)$", text, re.M)
    return float(found.group(1)) if found else 0.0


def test_a_new_browser_signs_in_through_a_flood_that_redis_keeps_nothing_of(flooded):
    live, redis = flooded
    prefix = live.env["REDIS_KEY_PREFIX"]
    before = set(redis.scan_iter(match=f"{prefix}*"))
    memory_before = redis.info("memory")["used_memory"]
    port = int(live.url.rsplit(":", 1)[1])
    under_way = threading.Event()
    began = time.monotonic()
    with ThreadPoolExecutor(max_workers=8) as pool, ThreadPoolExecutor(max_workers=1) as beside:
        answers = [pool.submit(flood_client, port, index, address) for index, address in enumerate(CLIENTS)]
        user = beside.submit(sign_in_during, live, under_way)
        # Once more sign-ins were started than the old bound admitted, while the last clients still flood.
        while sum(answer.done() for answer in answers) < OLD_BOUND // LIMIT + 8:
            time.sleep(0.1)
        under_way.set()
        totals = sum((answer.result() for answer in answers), Counter())
        status, session, took = user.result()
    seconds = time.monotonic() - began
    memory = redis.info("memory")
    added = Counter(
        key.decode()[len(prefix) :].split(":")[0] for key in set(redis.scan_iter(match=f"{prefix}*")) - before
    )
    print(
        f"flood: {len(CLIENTS)} clients, {sum(totals.values())} requests in {seconds:.1f} s {dict(totals)}; "
        f"the new browser signed in in {took:.1f} s; new keys {dict(added)}; used_memory "
        f"{memory_before / 2**20:.2f} -> {memory['used_memory'] / 2**20:.2f} MB "
        f"(peak {memory['used_memory_peak'] / 2**20:.2f} MB), evicted {redis.info('stats')['evicted_keys']}"
    )
    assert totals == {
        "login 302": LIMIT * len(CLIENTS),  # more than the old bound admitted, none refused for anyone else's
        "login 429": len(CLIENTS),  # the start past each client's own limit
        "callback 400": JUNK_CALLBACKS * len(CLIENTS),
    }
    assert LIMIT * len(CLIENTS) > OLD_BOUND
    assert (status, session["user"]) == (302, "bob")
    # Nothing per attempt: one rate-limit window per client or network and route, and the new browser's sign-in.
    assert added.pop("limits") <= 2 * len(counted_under([*CLIENTS, BROWSER]))
    assert added == {"login-used": 1, "session": 1, "tokens": 1, "sessions-of": 1, "sessions": 1, "session-end": 1}
    assert memory["used_memory"] - memory_before < 1 * 2**20
    assert metric(live, "pp_idp_requests_total", endpoint="par", outcome="ok") == LIMIT * len(CLIENTS) + 1
    assert metric(live, "pp_idp_requests_total", endpoint="token", outcome="ok") == 1  # junk reached no provider
