"""Measures what the service keeps in Redis: bytes per user profile (with its subject link), per
browser session (session key + token set) and per poke cooldown, on a real redis-server with real
tokens from the dev provider; and what bearer tokens leave at their bounds: DPoP proof ids, shared
introspection answers and refusals, the counters of provider calls. Run: python -m bench.studies.sizing
(make sizing). Writes bench/results/sizing.md."""

import json
import secrets
import statistics
import time
from pathlib import Path

import requests

from app import create_app
from app.extensions import make_redis, services
from app.store.profiles import Profile
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
    with app.app_context():
        grown.update(_bearer_keys(services().store, redis))
    usage = {
        "profile": _mean_usage(redis, "pp:user:{user*"),
        "subject link": _mean_usage(redis, "pp:sub:*"),
        "session key": _mean_usage(redis, "pp:session:*"),
        "token set": _mean_usage(redis, "pp:tokens:*"),
        "cooldown": _mean_usage(redis, "pp:cooldown:*"),
    }
    usage["DPoP proof ids of a key at its bound"] = _mean_usage(redis, "pp:dpop-jti:{bound}")
    return {"grown": grown, "usage": usage}


def _bearer_keys(store, redis) -> dict:
    """Bytes each of what bearer tokens leave in Redis at their bounds: a DPoP key's first proof id, a
    proof id of a key at RATE_LIMIT_DPOP_PROOFS, an introspection answer and refusal, the provider-call
    counters of a new IPv4 client (its address and its /24)."""
    grown, now = {}, time.time()
    before = _used_memory(redis)
    for index in range(KEYS_ONE_PROOF):
        store.seen_proofs.first_use(f"key{index:040d}", "jti", now=now, until=now + 65)
    grown["DPoP key with one proof"], before = (_used_memory(redis) - before) / KEYS_ONE_PROOF, _used_memory(redis)
    for _ in range(PROOFS_AT_BOUND):
        store.seen_proofs.first_use("bound", secrets.token_urlsafe(16), now=now, until=now + 65)
    grown["DPoP proof id (a key at its bound)"] = (_used_memory(redis) - before) / PROOFS_AT_BOUND
    answers, before = Answers(store.introspections), _used_memory(redis)
    for index in range(TOKENS):
        answers.refuse(token_digest(f"junk-{index}"), "the access token is not valid", until=now + 30, now=now)
    grown["introspection refusal"], before = (_used_memory(redis) - before) / TOKENS, _used_memory(redis)
    for index in range(TOKENS):
        principal = Principal(f"{index:08d}-sub-uuid-0000-000000000000", frozenset({"svc:profile.private"}), True,
                              f"user{index}", f"User {index}", now + 3600)  # fmt: skip
        answers.answer(token_digest(f"valid-{index}"), principal, until=now + 60, now=now)
    grown["introspection answer"], before = (_used_memory(redis) - before) / TOKENS, _used_memory(redis)
    checks = TokenChecks(
        redis, store.keys, per_client="30 per minute", per_network="60 per minute", total="1000000 per minute"
    )
    for index in range(CLIENTS):
        checks.admit(f"10.{index // 256}.{index % 256}.1")
    grown["provider-call counters of a new client"] = (_used_memory(redis) - before) / CLIENTS
    return grown


BEARER_ITEMS = (
    "DPoP key with one proof",
    "DPoP proof id (a key at its bound)",
    "introspection answer",
    "introspection refusal",
    "provider-call counters of a new client",
)


def _used_memory(redis) -> int:
    return int(redis.info("memory")["used_memory"])


def report(sizes: dict) -> str:
    grown, usage = sizes["grown"], sizes["usage"]
    cooldowns_live = 1000 * 24 * 3600  # a thousand pokes a second, each key kept for 24 hours
    lines = [
        "# Redis sizing (redis-server, real dev-provider tokens)\n",
        f"What each item added to `INFO memory` `used_memory` ({USERS:,} users, {POKES:,} pokes, "
        f"{SESSIONS} sign-ins): the figure to size by, as it counts Redis's own per-key overhead.\n",
        "| item | bytes each (`INFO memory` delta) |",
        "|---|--:|",
        f"| **user** (profile + subject link) | **{grown['user']:.0f}** |",
        f"| **poke cooldown** | **{grown['poke cooldown']:.0f}** |",
        f"| **browser session** (everything a sign-in leaves) | **{grown['browser session']:.0f}** |",
        *(f"| {name} | {grown[name]:.0f} |" for name in BEARER_ITEMS),
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
