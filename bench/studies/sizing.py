"""Measures what the service keeps in Redis: bytes per user profile (with its subject link), per
browser session (session key + token set) and per poke cooldown, on a real redis-server with real
tokens from the dev provider; and what bearer tokens leave at their bounds: DPoP proof ids, shared
introspection answers and refusals, the counters of provider calls; and what any client can make: the
rate limiter's windows and a claimed sign-in state. Run: python -m bench.studies.sizing (make sizing).
Writes bench/results/sizing.md."""

import json
import secrets
import statistics
import time
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import requests

from app import create_app
from app.extensions import make_redis, services
from app.store import Store
from app.store.profile_record import Profile
from app.store.token_checks import TokenChecks
from app.tokens.answers import Answers, token_digest
from app.tokens.principal import Principal
from config import Config
from dev import oidc_driver
from dev.services import local_app_env

from ..servers import redis_and_provider

RESULTS = Path(__file__).resolve().parent / "results" / "sizing.md"
USERS, SESSIONS, POKES = 20_000, 200, 20_000
KEYS_ONE_PROOF, PROOFS_AT_BOUND, TOKENS, CLIENTS = 2_000, 600, 5_000, 2_000
# IPv6 clients each in a /48 of its own: every client makes a key for its /64, /56 and /48, whose names
# (the longest any client makes) are what the per-key figures below are measured with.
IPV6_CLIENTS = [f"2001:db8:{index:x}:100::1" for index in range(CLIENTS)]


def _mean_usage(redis, pattern: str) -> float:
    return statistics.mean(redis.memory_usage(key, samples=0) for key in redis.scan_iter(match=pattern, count=1000))


def _sign_in(app, username: str) -> None:
    client = app.test_client()
    authorize = client.get("/auth/login").headers["Location"]
    callback = oidc_driver.login_at_idp(requests.Session(), authorize, username, "demo")
    parts = callback.split("/auth/callback", 1)[1]
    assert client.get(f"/auth/callback{parts}").status_code == 302


def measure(redis_url: str, issuer: str, app_port: int) -> dict:
    env = local_app_env(
        issuer,
        f"http://127.0.0.1:{app_port}",
        redis_url,
        LOG_LEVEL="WARNING",
        REDIS_KEY_PREFIX="pp:",
        RATE_LIMIT_LOGIN="1000 per minute",
        RATE_LIMIT_LOGIN_NETWORK="1000 per minute",
        PROXY_HOPS="1",
    )
    app = create_app(Config(env))
    redis = make_redis(redis_url, socket_timeout=5)
    demo = json.loads((Path(__file__).resolve().parent.parent / "dev" / "demo-users.json").read_text())[0]
    grown = {}  # what each kind added to INFO memory used_memory, per item (Redis's own overhead included)
    with app.app_context():
        profiles, pokes = services().store.profiles, services().store.pokes
        before = _used_memory(redis)
        for index in range(USERS):
            name = f"user{index:06d}"
            profiles.put(
                Profile(
                    name,
                    f"@{name}",
                    f"User {index}",
                    sub=secrets.token_hex(16) + "-uuid",
                    stats=demo["stats"],
                    aggregate_scores=demo["aggregate_scores"],
                )
            )
        grown["user"], before = (_used_memory(redis) - before) / USERS, _used_memory(redis)
        for index in range(POKES):
            pokes.try_poke(f"user{index % USERS:06d}", f"user{(index * 7 + 1) % USERS:06d}")
        grown["poke cooldown"], before = (_used_memory(redis) - before) / POKES, _used_memory(redis)
    # The first sign-ins also create what every later one shares (scripts, limiter and index keys):
    # the per-session figure is what the later ones add.
    first = SESSIONS // 4
    for index in range(SESSIONS):
        if index == first:
            before = _used_memory(redis)
        _sign_in(app, ("alice", "bob", "carol", "erin")[index % 4])
    grown["browser session"] = (_used_memory(redis) - before) / (SESSIONS - first)
    grown.update(_bounded_keys(redis_url, env))
    usage = {
        "profile": _mean_usage(redis, "pp:user:{user*"),
        "subject link": _mean_usage(redis, "pp:sub:*"),
        "session key": _mean_usage(redis, "pp:session:*"),
        "token set": _mean_usage(redis, "pp:tokens:*"),
        "cooldown": _mean_usage(redis, "pp:cooldown:*"),
    }
    proofs = make_redis(_database(redis_url, 2), socket_timeout=5)  # where _bounded_keys measured them
    usage["DPoP proof ids of a key at its bound"] = _mean_usage(proofs, "pp:dpop-jti:{bound}")
    return {"grown": grown, "usage": usage}


def _bounded_keys(redis_url: str, env: dict) -> dict:
    """Bytes each of what bearer tokens leave in Redis at their bounds (a DPoP key's first proof id, a
    proof id of a key at RATE_LIMIT_DPOP_PROOFS, an introspection answer and refusal, the provider-call
    counters of a new IPv4 client and one counter of an IPv6 client or network), and of the keys a flood
    or a sign-in can make (a rate limiter's window: junk callbacks, refused before any provider call, from
    IPv6 clients; a claimed sign-in state; a used logout token's id). Each kind is measured in a logical
    database of its own, empty before, so each carries the growth of its own hash tables as a flood's keys
    would, and none is measured while another kind's tables rehash or its keys expire."""
    now = time.time()
    windows_db = 7  # the rate limiter's windows are counted by an app of their own, in the database of their row
    client = create_app(Config({**env, "REDIS_URL": _database(redis_url, windows_db)})).test_client()
    principal = Principal("00000000-sub-uuid-0000-000000000000", frozenset({"svc:profile.private"}), True,
                          "user0", "User 0", now + 3600)  # fmt: skip

    def one_proof(store, index):
        store.seen_proofs.first_use(f"key{index:040d}", "jti", now=now, until=now + 65)

    def proof_id(store, _):
        store.seen_proofs.first_use("bound", secrets.token_urlsafe(16), now=now, until=now + 65)

    def refusal(store, index):  # kept an hour here (30 s in service): a key's cost does not depend on its TTL
        Answers(store.introspections).refuse(token_digest(f"junk-{index}"), "the access token is not valid",
                                             until=now + 3600, now=now)  # fmt: skip

    def answer(store, index):
        Answers(store.introspections).answer(token_digest(f"valid-{index}"), principal, until=now + 60, now=now)

    def window(_, index):
        response = client.get("/auth/callback?state=junk&code=junk", headers={"X-Forwarded-For": IPV6_CLIENTS[index]})
        assert response.status_code == 400

    def ipv4_client(store, index):
        _checks(store).admit(f"10.{index // 256}.{index % 256}.1")

    def logout(store, _):  # a jti of 22 characters, as oidc-provider makes them
        store.session_index.first_use_of_logout_token(secrets.token_urlsafe(16), 310)

    kinds = [  # (item, how many, what makes one, keys it makes)
        ("DPoP key with one proof", KEYS_ONE_PROOF, one_proof, 1),
        ("DPoP proof id (a key at its bound)", PROOFS_AT_BOUND, proof_id, 1),
        ("introspection refusal", TOKENS, refusal, 1),
        ("introspection answer", TOKENS, answer, 1),
        ("provider-call counters of a new client", CLIENTS, ipv4_client, 1),
        ("provider-call counter (one client or network)", CLIENTS, lambda s, i: _checks(s).admit(IPV6_CLIENTS[i]), 3),
        ("rate-limit window (one client or network, one route)", CLIENTS, window, 3),
        ("claimed sign-in state", CLIENTS, lambda s, _: s.used_states.claim(secrets.token_urlsafe(45), now + 600), 1),
        ("used logout token (back-channel)", CLIENTS, logout, 1),
    ]  # fmt: skip
    assert kinds[windows_db - 1][0].startswith("rate-limit window")
    return {
        item: _per_item(redis_url, database, count, make) / keys
        for database, (item, count, make, keys) in enumerate(kinds, start=1)
    }


def _per_item(redis_url: str, database: int, count: int, make) -> float:
    """What `make(store, index)` adds to `used_memory`, per call, over `count` calls into logical database
    `database` (emptied first)."""
    redis = make_redis(_database(redis_url, database), socket_timeout=5)
    redis.flushdb()
    store = Store(redis, "pp:")
    time.sleep(1)  # another database's rehash or expiry, if any, is over before the count starts
    before = _used_memory(redis)
    for index in range(count):
        make(store, index)
    return (_used_memory(redis) - before) / count


def _checks(store) -> TokenChecks:
    return TokenChecks(
        store.redis, store.keys, per_client="30 per minute", per_network="60 per minute", total="1000000 per minute"
    )


def _database(redis_url: str, database: int) -> str:
    return urlunsplit(urlsplit(redis_url)._replace(path=f"/{database}"))


BOUNDED_ITEMS = (
    "DPoP key with one proof",
    "DPoP proof id (a key at its bound)",
    "introspection answer",
    "introspection refusal",
    "provider-call counters of a new client",
    "provider-call counter (one client or network)",
    "rate-limit window (one client or network, one route)",
    "claimed sign-in state",
    "used logout token (back-channel)",
)


def _used_memory(redis) -> int:
    return int(redis.info("memory")["used_memory"])


def report(sizes: dict) -> str:
    grown, usage = sizes["grown"], sizes["usage"]
    cooldowns_live = 1000 * 24 * 3600  # a thousand pokes a second, each key kept for 24 hours
    lines = [
        "# Redis sizing (redis-server, real dev-provider tokens)\n",
        f"What each item added to `INFO memory` `used_memory` ({USERS:,} users, {POKES:,} pokes, "
        f"{SESSIONS} sign-ins): the figure to size by, as it counts Redis's own per-key overhead. The rows "
        "after the first three were each measured in a logical database of their own, empty before, so each "
        "carries the growth of its own hash tables, as a flood's keys would.\n",
        "| item | bytes each (`INFO memory` delta) |",
        "|---|--:|",
        f"| **user** (profile + subject link) | **{grown['user']:.0f}** |",
        f"| **poke cooldown** | **{grown['poke cooldown']:.0f}** |",
        f"| **browser session** (everything a sign-in leaves) | **{grown['browser session']:.0f}** |",
        *(f"| {name} | {grown[name]:.0f} |" for name in BOUNDED_ITEMS),
        "",
        "`MEMORY USAGE` of each key, for comparison (it leaves out the keyspace's own bookkeeping):\n",
        "| key | bytes each |",
        "|---|--:|",
        *(f"| {name} | {value:.0f} |" for name, value in usage.items()),
        "",
        f"- One million users: {grown['user'] * 1e6 / 2**30:.2f} GiB of profiles (their stats as in the demo data).",
        f"- A thousand pokes a second keep {cooldowns_live / 1e6:.1f} million cooldown keys alive (24 h each): "
        f"{grown['poke cooldown'] * cooldowns_live / 2**30:.1f} GiB, the largest item; Redis needs that much memory "
        "plus about 30 % for fragmentation and replication buffers, or a cluster that shards it.",
        f"- 100,000 concurrent browser sessions: {grown['browser session'] * 1e5 / 2**20:.0f} MiB.",
        f"- A DPoP key at `RATE_LIMIT_DPOP_PROOFS` (600 a minute; at most twice that within one 65 s acceptance "
        f"window, across two fixed windows): {grown['DPoP proof id (a key at its bound)'] * 1200 / 2**10:.0f} KiB; "
        f"10,000 such keys at once {grown['DPoP proof id (a key at its bound)'] * 1200 * 1e4 / 2**30:.1f} GiB.",
        f"- Introspection refusals live `INTROSPECTION_REFUSAL_TTL` (30 s) and each needs an admitted provider call: "
        f"the 600 a minute of the pool leave {grown['introspection refusal'] * 300 / 2**10:.0f} KiB, and each "
        f"network's share (30 a minute) {grown['introspection refusal'] * 15:.0f} bytes more per flooding network.",
        f"- A rate-limit window lives one window (60 s) per client or network and route: a minute of 10,000 "
        f"new IPv6 clients, each in a /48 of its own, on all three sign-in routes (9 windows each) keeps "
        f"{grown['rate-limit window (one client or network, one route)'] * 9e4 / 2**20:.1f} MiB.",
        "- Throughput: a poke costs one Redis round trip (the poker's profile read and the poke decided by one "
        "Lua script, pipelined), so 1,000 pokes/s is about 2,000 commands/s, far below one Redis core "
        "(~140k simple ops/s here).",
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    with redis_and_provider() as (redis_url, issuer, app_port):
        sizes = measure(redis_url, issuer, app_port)
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(report(sizes))
    print(RESULTS.read_text())


if __name__ == "__main__":
    main()
