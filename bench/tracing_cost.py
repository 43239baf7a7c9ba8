"""What tracing costs on each route: the shipped app with and without an OTLP endpoint, same run.

The traced app exports over OTLP/HTTP to the project's receiver (dev/otlp_receiver.py, decoding and
dropping, in this process), as it would to a collector. Each route gets one window on each app,
back to back and in alternating order, so a load that rises or falls weighs on both sides alike;
the cost is the server CPU per request (steady on a busy machine, where req/s is not).
"""

import secrets

from dev.otlp_receiver import Receiver
from dev.services import free_port

from .servers import SECONDS, WARMUP_SECONDS, start_server

# Windows the poke route spends here (a warm-up, one traced, one not), for seeding its targets.
POKE_WINDOWS = 3


def tracing_cost(bench, started: list, options: list) -> dict:
    """Route -> figures with tracing off and on, and the change in server CPU per request."""
    receiver = Receiver(keep=False).start()
    try:
        port = free_port()
        env = {
            **bench.env,
            "METRICS_TOKEN": secrets.token_urlsafe(32),
            "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url,
        }
        traced = start_server(started, "app-traced", "wsgi:app", port, "api/v1/openapi.json", env, options)
        traced_base = f"http://127.0.0.1:{port}/"
        rows = {}
        for index, (name, (url, _)) in enumerate(bench.routes.items()):
            traced_url = url.replace(bench.base, traced_base)
            bench.route(name, WARMUP_SECONDS, traced, traced_url, f"{name} traced warm-up")
            windows = {}
            for side in ("off", "on") if index % 2 == 0 else ("on", "off"):
                if side == "on":
                    windows[side] = bench.route(name, SECONDS, traced, traced_url, f"{name} tracing on")
                else:
                    windows[side] = bench.route(name, SECONDS, label=f"{name} tracing off")
            rows[name] = _row(windows["off"], windows["on"])
        traced.stop()
        started.remove(traced)
        return rows
    finally:
        receiver.stop()


def _row(off: dict, on: dict) -> dict:
    return {
        "off_rps": round(off["rps"], 1),
        "on_rps": round(on["rps"], 1),
        "off_p50_ms": off["p50_us"] / 1000,
        "on_p50_ms": on["p50_us"] / 1000,
        "off_cpu_us": round(off["cpu_us"], 1),
        "on_cpu_us": round(on["cpu_us"], 1),
        "cpu_cost": round(on["cpu_us"] / off["cpu_us"] - 1, 4),
    }


def tracing_lines(rows: dict) -> list[str]:
    """The report's tracing section."""
    lines = [
        "",
        "## Tracing off and on",
        "",
        "The shipped app without an OTLP endpoint (tracing off, as above) and with one (every request traced "
        "and exported over OTLP/HTTP to `dev/otlp_receiver.py`), one window each per route, same run:",
        "",
        "| route | req/s off | req/s on | p50 ms off | p50 ms on | CPU µs/req off | CPU µs/req on | CPU cost |",
        "|---|--:|--:|--:|--:|--:|--:|--:|",
    ]
    for name, row in rows.items():
        lines.append(
            f"| {name} | {row['off_rps']:.0f} | {row['on_rps']:.0f} | {row['off_p50_ms']:.2f} | "
            f"{row['on_p50_ms']:.2f} | {row['off_cpu_us']:.0f} | {row['on_cpu_us']:.0f} | {row['cpu_cost']:+.1%} |"
        )
    return lines
