"""Times the metrics code of one poke by itself, in multiprocess mode as under gunicorn: the request
histogram's after-request hook and the poke counter. Run: python -m bench.studies.metrics_code (prints JSON).

The with-and-without windows of `make bench` swing by more than the cost they look for on a shared
machine; this measures the code they differ by, best of several repeats."""

import json
import os
import sys
import tempfile
import time
import timeit

REPEATS, CALLS = 7, 20_000


def main() -> None:
    with tempfile.TemporaryDirectory() as directory:
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = directory  # before prometheus_client is first imported
        import fakeredis
        from flask import g, request

        from app import create_app, metrics
        from config import Config

        env = {
            "OIDC_ISSUER_URL": "http://issuer.invalid",
            "OIDC_CLIENT_ID": "bench",
            "OIDC_REDIRECT_URI": "http://127.0.0.1/auth/callback",
            "SECRET_KEY": "x" * 32,
            "SESSION_COOKIE_SECURE": "false",
            "LOG_LEVEL": "WARNING",
            "METRICS_TOKEN": "m" * 32,
        }
        app = create_app(Config(env), redis=fakeredis.FakeRedis())
        response = app.response_class("{}", 200)
        with app.test_request_context("/api/v1/pokes", method="POST"):
            request.url_rule = next(rule for rule in app.url_map.iter_rules() if rule.rule == "/api/v1/pokes")
            g.started = time.perf_counter()

            def count_request():
                metrics.count_request(response)

            def count_poke():
                with metrics.poke_observed():
                    pass

            seconds = {
                f.__name__: min(timeit.repeat(f, number=CALLS, repeat=REPEATS)) / CALLS
                for f in (count_request, count_poke)
            }
    json.dump({name: round(value * 1e6, 2) for name, value in seconds.items()}, sys.stdout)


if __name__ == "__main__":
    main()
