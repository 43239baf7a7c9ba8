"""Measures what 20,000 `GET /auth/login` from one client address leave in Redis (INFO memory
used_memory before and after) with the rate limiter on, and with it off for a browser that keeps its
login cookies and for a client that drops them. Run: python -m bench.studies.login_flood. Writes
bench/results/login-flood.md."""

import secrets
from pathlib import Path

from app import create_app
from app.extensions import make_redis
from config import Config
from dev.services import local_app_env

from ..servers import redis_and_provider

RESULTS = Path(__file__).resolve().parent / "results" / "login-flood.md"
REQUESTS = 20_000
CASES = [  # name, RATE_LIMIT_LOGIN, keeps its login cookies
    ("limiter on (30 per minute), no cookies", "30 per minute", False),
    ("limiter on (30 per minute), one browser", "30 per minute", True),
    ("limiter off, one browser (login cookies kept)", "1000000 per minute", True),
    ("limiter off, no cookies (a new browser each time)", "1000000 per minute", False),
]


def flood(redis_url: str, issuer: str, app_port: int, limit: str, keep_cookie: bool) -> dict:
    prefix = f"flood-{secrets.token_hex(3)}:"
    env = local_app_env(
        issuer,
        f"http://127.0.0.1:{app_port}",
        redis_url,
        LOG_LEVEL="ERROR",
        REDIS_KEY_PREFIX=prefix,
        RATE_LIMIT_LOGIN=limit,
    )
    app = create_app(Config(env))
    redis = make_redis(redis_url, socket_timeout=5)
    redis.flushall()
    before = redis.info("memory")["used_memory"]
    client = app.test_client(use_cookies=keep_cookie)
    statuses: dict[int, int] = {}
    for _ in range(REQUESTS):
        status = client.get("/auth/login").status_code
        statuses[status] = statuses.get(status, 0) + 1
    after = redis.info("memory")["used_memory"]
    keys = sum(1 for _ in redis.scan_iter(match=f"{prefix}*", count=1000))
    return {"before": before, "after": after, "keys": keys, "statuses": statuses}


def report(results: list[tuple[str, dict]]) -> str:
    lines = [
        f"# {REQUESTS:,} `GET /auth/login` from one client address (redis-server, INFO memory used_memory)\n",
        "| case | answers | keys left | used_memory before | after | growth |",
        "|---|---|--:|--:|--:|--:|",
    ]
    for name, r in results:
        answers = ", ".join(f"{count} x {status}" for status, count in sorted(r["statuses"].items()))
        growth = r["after"] - r["before"]
        lines.append(f"| {name} | {answers} | {r['keys']} | {r['before']:,} | {r['after']:,} | {growth:,} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    with redis_and_provider() as (redis_url, issuer, app_port):
        results = [(name, flood(redis_url, issuer, app_port, limit, keep)) for name, limit, keep in CASES]
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(report(results))
    print(RESULTS.read_text())


if __name__ == "__main__":
    main()
