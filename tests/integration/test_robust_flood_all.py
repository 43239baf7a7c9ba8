"""Every key a flood can make is bounded, and proven (issue 28, point 4): every entry point flooded at once.

Two instances of the app run under the shipped gunicorn config behind one trusted proxy hop (PROXY_HOPS=1,
X-Forwarded-For) with every bound at its default, over one redis-server of 16 MB under the recommended
`noeviction` and the real dev provider. The first validates access tokens as JWTs and takes the browser's
entry points; the second validates them by introspection, because junk opaque tokens are the only junk an
API call makes the service write to Redis (refusals and provider-call counters; a junk JWT is refused in
memory), and one instance has one mode.

The flood comes from 81 clients: 40 IPv4 /24s, 11 addresses of one more /24, 24 IPv6 /64s in 12 /56s of
4 /48s, and 6 NAT64 addresses. Each starts sign-ins (some up to and past their own limit, the 11 past
their network's), sends callbacks with forged states and other browsers' states, SPA exchanges of junk
codes, junk bearer tokens, junk DPoP proofs, back-channel logout junk and junk opaque tokens; 4 of them
sign in at the provider as an attacker would, then send their real pending sign-ins' callbacks with junk
codes, and replay the same cookies; three DPoP keys with valid bound tokens send proofs up to their bound
and past it. Meanwhile a signed-in user keeps working (cookie calls that refresh its tokens, a poke, a
bearer call, a DPoP call, an opaque token on the second instance) and a new user signs in and works.

Redis must stay under the bound computed from the cost of each kind of key (bench/results/sizing.md,
`make sizing`) times how many of each this flood's size allows, as docs/operations.md
"Redis: eviction policy and sizing" tells it; every flood request gets its documented answer; every key
left has a time to live within its kind's, but profiles, subject links and the index of live sessions."""

import re
import secrets
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urlsplit

import pytest
import requests

from app.auth.flow import OTHER_BROWSERS_SIGN_IN, UNKNOWN_SIGN_IN
from app.errors import PROVIDER_BUSY
from app.extensions import make_redis
from app.provider.login_client import EXCHANGE_REFUSED
from app.store.keys import Keys
from app.tokens.answers import token_digest
from dev import oidc_driver
from dev.dpop import DpopKey
from dev.services import free_port, start_redis
from tests.helpers.floods import counted_under, metric, send, stranger_jwt, unsigned_jwt, widest_networks
from tests.helpers.real_services import (
    OPAQUE_CLIENT,
    PASSWORD,
    delete_prefix,
    integration_env,
    introspection_settings,
    start_live_app,
    start_own_idp,
)
from tests.helpers.settings import CSRF

# Its own single redis-server with a small maxmemory: the --redis-cluster pass would only run it again.
pytestmark = [pytest.mark.integration, pytest.mark.single_redis]

SIZING = Path(__file__).resolve().parents[2] / "bench" / "results" / "sizing.md"
MAXMEMORY_MB = 16
METRICS_TOKEN = secrets.token_urlsafe(16)
PROFILE = "/api/v1/me/profile"
LOGIN_LIMIT, LOGIN_NETWORK_LIMIT, DPOP_BOUND, POOL, SHARE, NETWORK_SHARE = 30, 300, 600, 600, 30, 60  # defaults
FROM_ADDRESS = "too many requests from this address; try again later"
FROM_NETWORK = "too many requests from this network; try again later"
TOO_MANY_PROOFS = "too many DPoP proofs signed with this key; try again later"
TOKENS_FROM_NETWORK = "too many unknown access tokens from this network; try again later"
PROVIDER_DOWN = "the identity provider is unavailable"  # a failed call (docs/operations.md "What each 503 means")
IPV4 = [f"198.18.{n}.{n % 7 + 1}" for n in range(40)]  # 198.18.0.0/15 is for benchmarks
DENSE = [f"198.19.7.{host}" for host in range(1, 12)]  # one /24: 330 starts spend its 300
IPV6 = [
    f"2001:db8:{site:x}:{net56:02x}{net64:02x}::1"
    for site in range(0xF0, 0xF4)
    for net56 in (1, 2, 3)
    for net64 in (0, 1)
]
NAT64 = [f"64:ff9b::c613:{third:02x}{host:02x}" for third in (8, 9) for host in (1, 2, 3)]  # in 198.19.8/24, .9/24
CLIENTS = IPV4 + DENSE + IPV6 + NAT64
FULL = {*IPV4[:6], *IPV6[:2], NAT64[0]}  # start sign-ins until one past their own limit
ATTACKERS = [IPV4[10], IPV6[7], NAT64[4], IPV4[20]]  # sign in at the provider to learn real states
JUNK_OPAQUE = 10  # per client, at the introspection instance
USER, NEWCOMER, OPAQUE_USER = "100.64.50.7", "192.0.2.10", "2001:db8:beef:100::7"  # the legitimate users
# Keys that live as long as the data they hold (docs/operations.md): profiles, subject links, the live-session index.
PERMANENT = {"user", "sub", "sessions"}
# The longest time each kind of key the flood makes may live (s): one rate window, the DPoP acceptance window.
# (introspection: a refusal's INTROSPECTION_REFUSAL_TTL; the one answer, the legitimate token's, is left out)
FLOOD_LIFETIMES = {"limits": 60, "token-checks": 60, "introspection": 30, "dpop-jti": 65, "dpop-rate": 60}
# Redis's own memory beside the keys: each connection's buffers, at most about 32 KB (14 KB measured here)
# for each app thread that talks to Redis.
CONNECTION = 32 << 10


@pytest.fixture(scope="module")
def fleet(workdir):
    """The JWT instance (2 workers) and the introspection instance (1 worker), the provider, a small Redis."""
    redis_port, jwt_port, opaque_port = free_port(), free_port(), free_port()
    redis_server = start_redis(
        redis_port,
        workdir=workdir / "flood-all-redis",
        extra_args=("--maxmemory", f"{MAXMEMORY_MB}mb", "--maxmemory-policy", "noeviction"),
    )
    redis_url = f"redis://127.0.0.1:{redis_port}/0"
    idp_server, idp = start_own_idp(workdir, [jwt_port, opaque_port])
    limits = ("RATE_LIMIT_LOGIN", "RATE_LIMIT_EXCHANGE", "RATE_LIMIT_LOGIN_NETWORK", "RATE_LIMIT_EXCHANGE_NETWORK")
    common = {"PROXY_HOPS": "1", "METRICS_TOKEN": METRICS_TOKEN, **dict.fromkeys(limits, "")}  # "": the default
    jwt_env = integration_env(idp, redis_url, 0, OIDC_CLIENT_ID="profile-poke-web-short", **common)
    opaque_env = integration_env(idp, redis_url, 1, **introspection_settings(idp), **common)
    jwt_server, jwt_app = start_live_app(jwt_env, jwt_port, workdir, workers=2)
    opaque_server, opaque_app = start_live_app(opaque_env, opaque_port, workdir, workers=1)
    yield idp, jwt_app, opaque_app, make_redis(redis_url, socket_timeout=5)
    for server in (opaque_server, jwt_server, idp_server):
        server.stop()
    for live in (jwt_app, opaque_app):
        delete_prefix(redis_url, live.env["REDIS_KEY_PREFIX"])
    redis_server.stop()


def port_of(live) -> int:
    return int(live.url.rsplit(":", 1)[1])


def browser(address: str) -> requests.Session:
    http = requests.Session()
    http.headers["X-Forwarded-For"] = address
    return http


def sign_in(live, http: requests.Session, username: str) -> tuple[str, dict]:
    """A real sign-in of `username` in `http`; the provider's callback URL and the login cookie it used."""
    start = http.get(f"{live.url}/auth/login", params={"return_to": "/me"}, allow_redirects=False, timeout=30)
    assert start.status_code == 302, start.text
    cookies = dict(http.cookies)
    callback = oidc_driver.login_at_idp(http, start.headers["Location"], username, PASSWORD)
    return callback, cookies


def attacker_state(live, address: str) -> tuple[str, str, str]:
    """A real pending sign-in of an attacker's own: its callback's query with a junk code instead of the
    provider's, its `state`, and the login cookie header that keeps it."""
    http = browser(address)
    callback, cookies = sign_in(live, http, "mallory")
    query = dict(parse_qsl(urlsplit(callback).query))
    junk = urlencode({**query, "code": "junk"})
    return junk, query["state"], "; ".join(f"{name}={value}" for name, value in cookies.items())


def browser_entry_points(live, index: int, address: str, *, foreign_state: str, real, bound_token: str) -> Counter:
    """What one flood client sends to the JWT instance's browser and API entry points, and the answers."""
    port, seen = port_of(live), Counter()

    def note(kind: str, answer) -> None:
        seen[(kind, answer.status, answer.message)] += 1

    for _ in range(LOGIN_LIMIT + 1 if address in FULL else LOGIN_LIMIT if address in DENSE else 2):
        answer = send(port, index, address, "GET", "/auth/login?return_to=/" + "x" * 500)
        note("login", answer._replace(message=answer.message if answer.status != 302 else ""))
    for _ in range(2):
        note("callback", send(port, index, address, "GET", f"/auth/callback?state={secrets.token_urlsafe(45)}&code=x"))
    note("callback", send(port, index, address, "GET", f"/auth/callback?state={foreign_state}&code=junk"))
    for _ in range(3 if real else 0):  # junk codes on a real pending sign-in, its cookie sent again each time
        query, _, cookie = real
        note("callback", send(port, index, address, "GET", f"/auth/callback?{query}", headers={"Cookie": cookie}))
    exchange = {"code": "junk", "code_verifier": "v" * 43, "redirect_uri": f"{live.url}/"}
    for _ in range(2):
        note("exchange", send(port, index, address, "POST", "/auth/exchange", headers=CSRF, json_body=exchange))
    for token in (secrets.token_urlsafe(30), stranger_jwt(), unsigned_jwt()):
        note("bearer", send(port, index, address, "GET", PROFILE, headers={"Authorization": f"Bearer {token}"}))
    stranger = DpopKey.generate("ES256")
    token = stranger_jwt({"cnf": {"jkt": stranger.thumbprint()}})
    proof = stranger.proof("GET", live.url + PROFILE, access_token=token)
    note("dpop", send(port, index, address, "GET", PROFILE, headers={"Authorization": f"DPoP {token}", "DPoP": proof}))
    garbage = {"Authorization": f"DPoP {bound_token}", "DPoP": "x.y.z"}  # a valid bound token, a junk proof
    note("dpop", send(port, index, address, "GET", PROFILE, headers=garbage))
    for form in ({}, {"logout_token": stranger_jwt({"events": {}})}):
        note("backchannel", send(port, index, address, "POST", "/auth/backchannel-logout", form=form))
    return seen


def junk_opaque_tokens(live, index: int, address: str) -> Counter:
    """Junk opaque tokens from one flood client at the introspection instance, and the answers."""
    seen = Counter()
    for _ in range(JUNK_OPAQUE):
        headers = {"Authorization": f"Bearer {secrets.token_urlsafe(32)}"}
        answer = send(port_of(live), index, address, "GET", PROFILE, headers=headers)
        seen[("opaque", answer.status, answer.message)] += 1
    return seen


def proofs_up_to_the_bound(live, index: int, key: DpopKey, token: str) -> Counter:
    """One DPoP key's valid proofs with its valid bound token, up to its bound and past it."""
    seen = Counter()
    for _ in range(DPOP_BOUND + 10):
        proof = key.proof("GET", live.url + PROFILE, access_token=token)
        headers = {"Authorization": f"DPoP {token}", "DPoP": proof}
        answer = send(port_of(live), 1000 + index, IPV4[30 + index], "GET", PROFILE, headers=headers)
        seen[("proofs", answer.status, answer.message)] += 1
    return seen


class Legitimate:
    """The users who are not flooding: what each of their requests got."""

    def __init__(self, idp, jwt_app, opaque_app):
        self.jwt_app, self.opaque_app = jwt_app, opaque_app
        self.user = browser(USER)
        callback, _ = sign_in(jwt_app, self.user, "alice")
        assert self.user.get(callback, allow_redirects=False, timeout=30).status_code == 302
        self.bearer = idp.user_tokens("alice")["access_token"]
        self.key = DpopKey.generate("ES256")
        self.bound = idp.user_tokens("bob", dpop_key=self.key)["access_token"]
        self.opaque = idp.user_tokens("carol", client_id=OPAQUE_CLIENT)["access_token"]
        self.answers: list[tuple[str, int]] = []
        self.rounds = 0

    def keep_working(self, flood_over: threading.Event) -> None:
        """The signed-in user's calls, round after round while the flood lasts: a cookie call (its tokens
        refresh when due), a poke in the third round, a bearer call, a DPoP call, an opaque token."""
        api = f"{self.jwt_app.url}/api/v1"
        while not flood_over.is_set() or self.rounds < 3:
            self._note("cookie", self.user.get(f"{api}/me/profile", headers=CSRF, timeout=30))
            if self.rounds == 2:
                self._note("poke", self.user.post(f"{api}/pokes", json={"username": "carol"}, headers=CSRF, timeout=30))
            self._note(
                "bearer", requests.get(f"{api}/me/profile", headers=self._as(USER, "Bearer", self.bearer), timeout=30)
            )
            proof = self.key.proof("GET", f"{api}/me/profile", access_token=self.bound)
            headers = {**self._as(USER, "DPoP", self.bound), "DPoP": proof}
            self._note("dpop", requests.get(f"{api}/me/profile", headers=headers, timeout=30))
            headers = self._as(OPAQUE_USER, "Bearer", self.opaque)
            self._note("opaque", requests.get(f"{self.opaque_app.url}/api/v1/me/profile", headers=headers, timeout=30))
            self.rounds += 1
            time.sleep(0.3)

    def newcomer(self, under_way: threading.Event) -> None:
        """A user who never signed in before starts and finishes a sign-in once the flood is under way, and
        works; then a flood client replays the sign-in's callback with the login cookie it was made with."""
        under_way.wait(120)
        http = browser(NEWCOMER)
        callback, cookies = sign_in(self.jwt_app, http, "erin")
        self._note("sign-in", http.get(callback, allow_redirects=False, timeout=30))
        self._note("cookie", http.get(f"{self.jwt_app.url}{PROFILE}", headers=CSRF, timeout=30))
        path, cookie = "/" + callback.split("/", 3)[3], "; ".join(f"{k}={v}" for k, v in cookies.items())
        self.replayed = send(port_of(self.jwt_app), 999, IPV4[0], "GET", path, headers={"Cookie": cookie})

    def _note(self, what: str, response) -> None:
        self.answers.append((what, response.status_code))

    @staticmethod
    def _as(address: str, scheme: str, token: str) -> dict:
        return {"X-Forwarded-For": address, "Authorization": f"{scheme} {token}"}


def used_memory_while(redis, flood_over: threading.Event, samples: list[int]) -> None:
    """`used_memory` every 0.2 s until the flood is over."""
    while not flood_over.is_set():
        samples.append(redis.info("memory")["used_memory"])
        time.sleep(0.2)


def test_every_entry_point_flooded_at_once_keeps_redis_under_its_bound_and_users_working(fleet):
    idp, jwt_app, opaque_app, redis = fleet
    legit = Legitimate(idp, jwt_app, opaque_app)
    keys = [DpopKey.generate("ES256") for _ in range(3)]
    users = ("alice", "bob", "carol")
    bound_tokens = [idp.user_tokens(name, dpop_key=key)["access_token"] for name, key in zip(users, keys, strict=True)]
    prefixes = [live.env["REDIS_KEY_PREFIX"] for live in (jwt_app, opaque_app)]
    real = {address: attacker_state(jwt_app, address) for address in ATTACKERS}
    before = {key for prefix in prefixes for key in redis.scan_iter(match=f"{prefix}*")}
    baseline = redis.info("memory")["used_memory"]
    seen, seconds, samples = flood(jwt_app, opaque_app, redis, legit, keys, bound_tokens, real)
    memory = redis.info("memory")
    legit_answer = Keys(prefixes[1]).introspection(token_digest(legit.opaque)).encode()
    added = Counter(kind_of(key, prefixes) for key in set(redis.scan_iter(match="*")) - before - {legit_answer})
    bound = flood_bound(sizing_costs(), legit, redis.info("clients")["connected_clients"])
    report(seen, seconds, legit, baseline, samples, memory, added, bound)

    assert_documented_answers(seen)
    refused = [(what, status) for what, status in legit.answers if status != (302 if what == "sign-in" else 200)]
    assert refused == []  # no 503, no 429, no 500: nothing but what they asked for
    assert ("sign-in", 302) in legit.answers and ("poke", 200) in legit.answers and legit.rounds >= 3
    assert (legit.replayed.status, legit.replayed.message) == (400, UNKNOWN_SIGN_IN)  # no second exchange
    assert metric(jwt_app.url, METRICS_TOKEN, "pp_refreshes_total", outcome="refreshed") >= 1
    admitted = sum(count for (kind, status, _), count in seen.items() if (kind, status) == ("opaque", 401))
    assert_new_keys_within_their_bounds(added, admitted)
    assert max(redis.zcard(Keys(prefixes[0]).dpop_proofs(key.thumbprint())) for key in keys) == DPOP_BOUND
    assert max([*samples, memory["used_memory"]]) <= baseline + sum(bound.values())
    assert redis.info("stats")["evicted_keys"] == 0
    assert_every_key_expires(redis, prefixes, before | {legit_answer})
    for live in (jwt_app, opaque_app):
        assert "unexpected failure" not in live.log_path.read_text()


def flood(jwt_app, opaque_app, redis, legit: Legitimate, keys, bound_tokens, real) -> tuple[Counter, float, list]:
    """Every flood client's requests at once, 8 at a time, while the legitimate users work and `used_memory`
    is sampled: the answers the flood got, how long it took, and the samples."""
    foreign = [state for _, state, _ in real.values()]
    flood_over, under_way, samples = threading.Event(), threading.Event(), []
    began = time.monotonic()
    with ThreadPoolExecutor(8) as pool, ThreadPoolExecutor(3) as beside:
        watching = beside.submit(used_memory_while, redis, flood_over, samples)
        working = beside.submit(legit.keep_working, flood_over)
        arriving = beside.submit(legit.newcomer, under_way)
        try:
            jobs = [
                pool.submit(proofs_up_to_the_bound, jwt_app, n, key, token)
                for n, (key, token) in enumerate(zip(keys, bound_tokens, strict=True))
            ]
            for index, address in enumerate(CLIENTS):
                jobs.append(pool.submit(
                    browser_entry_points, jwt_app, index, address,
                    foreign_state=foreign[index % len(foreign)], real=real.get(address),
                    bound_token=bound_tokens[index % len(keys)],
                ))  # fmt: skip
                jobs.append(pool.submit(junk_opaque_tokens, opaque_app, index, address))
            while sum(job.done() for job in jobs) < len(jobs) // 3:
                time.sleep(0.1)
            under_way.set()
            seen = sum((job.result() for job in jobs), Counter())
            seconds = time.monotonic() - began
        finally:
            under_way.set()
            flood_over.set()
        for done in (watching, working, arriving):
            done.result()
    return seen, seconds, samples


def kind_of(key: bytes, prefixes: list[str]) -> str:
    """The kind of an app's key (`limits`, `session`, ...): its name's first part after the app's prefix."""
    name = key.decode()
    prefix = next((prefix for prefix in prefixes if name.startswith(prefix)), "")
    return name[len(prefix) :].split(":")[0] if prefix else f"(not the apps') {name}"


def assert_new_keys_within_their_bounds(added: Counter, admitted: int) -> None:
    """What the flood and the users left, kind by kind, within what the bounds allow for this flood's size:
    rate-limit windows and provider-call counters per client and network, a refusal per admitted provider
    call, a DPoP key's ids under its thumbprint; the newcomer's session and profile; nothing else (no
    pending sign-in, no claim a failed exchange gave back, no logout token that did not verify)."""
    allowed = {
        "limits": 3 * len(counted_under(CLIENTS)) + 2 * len(counted_under([NEWCOMER])),
        "token-checks": len(counted_under([*CLIENTS, OPAQUE_USER])) + 1,
        "introspection": admitted,
        "dpop-jti": 4,  # the three flood keys and the user's
        "dpop-rate": 4,
        "login-used": 1,  # the newcomer's sign-in: only a code the provider accepted keeps its state claimed
        **dict.fromkeys(("session", "tokens", "sessions-of", "sessions-of-sid", "session-end"), 1),  # the newcomer's
        **dict.fromkeys(("user", "sub", "cooldown", "refresh-lock"), 1),  # the newcomer's profile, the poke
    }
    assert set(added) <= set(allowed), added
    assert all(added[kind] <= allowed[kind] for kind in added), (added, allowed)


def assert_documented_answers(seen: Counter) -> None:
    """Each flood request got the answer docs/operations.md gives for it, and nothing else."""
    kinds: dict[str, Counter] = {}
    for (kind, status, message), count in seen.items():
        kinds.setdefault(kind, Counter())[(status, message)] += count
    others = len(CLIENTS) - len(FULL) - len(DENSE)
    assert kinds.pop("login") == {
        (302, ""): 2 * others + LOGIN_LIMIT * len(FULL) + LOGIN_NETWORK_LIMIT,
        (429, FROM_ADDRESS): len(FULL),  # the start past each such client's own limit
        (429, FROM_NETWORK): LOGIN_LIMIT * len(DENSE) - LOGIN_NETWORK_LIMIT,  # past their /24's
    }
    assert kinds.pop("callback") == {
        (400, UNKNOWN_SIGN_IN): 2 * len(CLIENTS),  # forged states
        (400, OTHER_BROWSERS_SIGN_IN): len(CLIENTS),  # another browser's state, without its cookie
        (400, EXCHANGE_REFUSED): 3 * len(ATTACKERS),  # junk codes on real pending sign-ins, cookies replayed
    }
    assert kinds.pop("exchange") == {(400, EXCHANGE_REFUSED): 2 * len(CLIENTS)}
    assert kinds.pop("proofs") == {(200, ""): DPOP_BOUND * 3, (429, TOO_MANY_PROOFS): 10 * 3}
    for kind, status, each in (("bearer", 401, 3), ("dpop", 401, 2), ("backchannel", 400, 2)):
        answers = kinds.pop(kind)
        assert {answer_status for answer_status, _ in answers} == {status} and answers.total() == each * len(CLIENTS)
    opaque = kinds.pop("opaque")
    assert opaque.total() == JUNK_OPAQUE * len(CLIENTS)
    assert {status for status, _ in opaque} <= {401, 429, 503}
    assert {message for status, message in opaque if status == 503} <= {PROVIDER_BUSY, PROVIDER_DOWN}
    assert opaque[(429, TOKENS_FROM_NETWORK)] == JUNK_OPAQUE * len(DENSE) - NETWORK_SHARE  # the dense /24's
    assert opaque[(503, PROVIDER_BUSY)] > 0  # the pool was spent: each network kept its share
    admitted = sum(count for (status, _), count in opaque.items() if status == 401)
    assert admitted <= POOL + SHARE * len(widest_networks(CLIENTS))
    assert kinds == {}


def sizing_costs() -> dict[str, int]:
    """What each kind of key costs in `used_memory` (bytes), as `make sizing` measured it."""
    table = SIZING.read_text().split("`MEMORY USAGE`", 1)[0]
    rows = re.findall(r"^\| (.+?) \| \**(\d+)\** \|$", table, re.M)
    return {re.sub(r"^\*\*(.+?)\*\*.*", r"\1", name): int(value) for name, value in rows}


def flood_bound(costs: dict[str, int], legit: Legitimate, connections: int) -> dict[str, int]:
    """What this flood and the legitimate users may add to Redis, kind by kind: each kind's cost times
    how many of it the bounds allow for this flood's size (docs/operations.md), and the buffers of the
    apps' `connections`."""
    one_key = costs["DPoP key with one proof"]
    proof_id = costs["DPoP proof id (a key at its bound)"]
    return {
        # login, callback and exchange: one window per client and network that sent one; the newcomer's two
        "rate-limit windows": costs["rate-limit window (one client or network, one route)"]
        * (3 * len(counted_under(CLIENTS)) + 2 * len(counted_under([NEWCOMER]))),
        "provider-call counters": costs["provider-call counter (one client or network)"]
        * (len(counted_under([*CLIENTS, OPAQUE_USER])) + 1),  # and the pool's
        # One per admitted provider call: the pool and each widest network's share.
        "introspection refusals": costs["introspection refusal"]
        * min(JUNK_OPAQUE * len(CLIENTS), POOL + SHARE * len(widest_networks(CLIENTS))),
        "DPoP proof ids": 3 * (one_key + (DPOP_BOUND - 1) * proof_id) + one_key + legit.rounds * proof_id,
        "the users' own": costs["browser session"] + costs["user"] + costs["claimed sign-in state"]
        + costs["poke cooldown"] + costs["introspection answer"],
        "Redis's own": CONNECTION * connections,
    }  # fmt: skip


def assert_every_key_expires(redis, prefixes: list[str], known: set[bytes]) -> None:
    """Every key has a time to live, but profiles, subject links and the live-session index; each kind
    the flood makes (a key not `known` before it) one no longer than its kind's."""
    for prefix in prefixes:
        for key in redis.scan_iter(match=f"{prefix}*"):
            kind, ttl = key.decode()[len(prefix) :].split(":")[0], redis.ttl(key)
            if kind in PERMANENT:
                continue
            assert ttl > 0, key
            if key not in known and kind in FLOOD_LIFETIMES:
                assert ttl <= FLOOD_LIFETIMES[kind], (key, ttl)


def report(seen, seconds, legit, baseline, samples, memory, added, bound) -> None:
    statuses = Counter()
    for (kind, status, _), count in seen.items():
        statuses[f"{kind} {status}"] += count
    print(
        f"flood: {seen.total()} requests from {len(CLIENTS)} clients in {seconds:.1f} s "
        f"{dict(sorted(statuses.items()))}; legitimate: {dict(Counter(legit.answers))} in {legit.rounds} rounds; "
        f"new keys {dict(added)}; used_memory {baseline / 2**20:.2f} MB -> max {max(samples, default=0) / 2**20:.2f} "
        f"MB, after {memory['used_memory'] / 2**20:.2f} MB (connections {memory['mem_clients_normal'] / 2**10:.0f} "
        f"KB); bound {baseline / 2**20:.2f} MB + {', '.join(f'{k} {v / 2**10:.0f} KB' for k, v in bound.items())}"
    )
