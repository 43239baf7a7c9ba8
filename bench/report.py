"""The figures and the Markdown of `make bench`: medians over the rounds, the service's ratio to each
peer with its spread, the latencies at a fixed load, and the targets (keep-alive clients)."""

import statistics

from . import open_loop
from .servers import FLASK_PEER, SERVICE, UVICORN_CONFIGS

P99_OVER_P50 = 2.5
# p99 over p50 open-loop at 80 % of the peak.
P99_OVER_P50_AT_80 = 2.0
# The service's req/s over the better FastAPI configuration's, per route, and over plain Flask's.
FASTAPI_TARGETS = {"public profile": 0.75, "own profile, bearer": 1.0, "poke": 1.0}
FLASK_TARGET = 1.0
FIGURES = ("rps", "p50_us", "p99_us", "cpu_server_ms", "cpu_redis_ms", "cpu_wrk_ms")
BEST_FASTAPI = "FastAPI, the better configuration"


def summarize(windows: dict) -> dict:
    """mode -> route -> {"medians": name -> figures, "ratios": peer -> spread, "best_fastapi": name}."""
    summary = {}
    for mode, routes in windows.items():
        summary[mode] = {}
        for route, by_server in routes.items():
            medians = {name: _medians(rounds) for name, rounds in by_server.items()}
            best = max((name for name in UVICORN_CONFIGS if name in medians), key=lambda name: medians[name]["rps"])
            peers = {name: rounds for name, rounds in by_server.items() if name != SERVICE}
            peers[BEST_FASTAPI] = by_server[best]
            ratios = {name: _spread(by_server[SERVICE], rounds) for name, rounds in peers.items()}
            summary[mode][route] = {"medians": medians, "ratios": ratios, "best_fastapi": best}
    return summary


def _medians(rounds: list[dict]) -> dict:
    medians = {key: statistics.median(window[key] for window in rounds) for key in FIGURES}
    medians["tail"] = statistics.median(window["p99_us"] / window["p50_us"] for window in rounds)
    return medians


def _spread(service: list[dict], peer: list[dict]) -> dict:
    """The service's req/s over the peer's, round by round: median, lowest and highest."""
    ratios = [mine["rps"] / theirs["rps"] for mine, theirs in zip(service, peer, strict=True)]
    return {"median": statistics.median(ratios), "min": min(ratios), "max": max(ratios)}


def checks(summary: dict, paced: dict) -> list[tuple[str, str, bool]]:
    """(target, measured, met) for each target, all with keep-alive clients."""
    rows = []
    for route, row in summary["keep-alive"].items():
        flask = row["ratios"][FLASK_PEER]["median"]
        rows.append((f"{route}: ≥ {FLASK_TARGET:.2f} x plain Flask", f"{flask:.2f}", flask >= FLASK_TARGET))
        fastapi = row["ratios"][BEST_FASTAPI]["median"]
        goal = FASTAPI_TARGETS[route]
        rows.append((f"{route}: ≥ {goal:.2f} x the better FastAPI", f"{fastapi:.2f}", fastapi >= goal))
        tail = row["medians"][SERVICE]["tail"]
        rows.append((f"{route}: service p99 ≤ {P99_OVER_P50} x p50", f"{tail:.1f}", tail <= P99_OVER_P50))
        at_80 = paced[route][SERVICE]["80 %"]
        tail = at_80["p99_us"] / at_80["p50_us"]
        goal = P99_OVER_P50_AT_80
        rows.append((f"{route}: service p99 ≤ {goal} x p50 at 80 % of its peak", f"{tail:.1f}", tail <= goal))
    return rows


def _figures_table(routes: dict) -> list[str]:
    lines = [
        "| route | implementation | req/s | p50 ms | p99 ms | p99/p50 | CPU ms/req: server | Redis | wrk |",
        "|---|---|--:|--:|--:|--:|--:|--:|--:|",
    ]
    for route, row in routes.items():
        for name, figures in row["medians"].items():
            shown = f"**{name}**" if name == SERVICE else name
            lines.append(
                f"| {route} | {shown} | {figures['rps']:,.0f} | {figures['p50_us'] / 1000:.2f} | "
                f"{figures['p99_us'] / 1000:.2f} | {figures['tail']:.1f} | {figures['cpu_server_ms']:.3f} | "
                f"{figures['cpu_redis_ms']:.3f} | {figures['cpu_wrk_ms']:.3f} |"
            )
    return lines


def _ratio_table(summary: dict) -> list[str]:
    first = next(iter(next(iter(summary.values())).values()))
    peers = list(first["ratios"])
    lines = [
        "| route | clients | " + " | ".join(f"÷ {name}" for name in peers) + " |",
        "|---|---|" + "--:|" * len(peers),
    ]
    for mode, routes in summary.items():
        for route, row in routes.items():
            cells = [f"{s['median']:.2f} ({s['min']:.2f} to {s['max']:.2f})" for s in row["ratios"].values()]
            lines.append(f"| {route} | {mode} | " + " | ".join(cells) + " |")
    return lines


def markdown(results: dict) -> str:
    """The whole report."""
    summary = results["summary"]
    lines = [
        "# Benchmark: the service and its peers",
        "",
        f"{results['when']}, {results['cores']} cores, load average {results['load_average'][0]:.1f} at the start "
        f"and {results['load_average'][1]:.1f} at the end; `{results['wrk']}`, {results['rounds']} interleaved "
        f"rounds, wrk, Redis and the servers on the same cores. gunicorn (service and plain Flask): "
        f"{results['gunicorn']}. FastAPI: uvicorn, 2 workers. Medians over the rounds; CPU per request by "
        "process: the server's whole process tree, Redis, the load generator.",
    ]
    if results.get("large"):
        sizes = results["large"]
        kinds = ", ".join(
            f"{v['keys']:,} {k} keys at {v['bytes_each']:.0f} bytes each"
            for k, v in sizes.items()
            if k != "used_memory_mib"
        )
        lines += [
            "",
            f"BENCH_DATA=large: {kinds} (`INFO memory` delta); Redis used_memory {sizes['used_memory_mib']} MiB.",
        ]
    for mode, routes in summary.items():
        lines += ["", f"## {mode}", "", *_figures_table(routes)]
    lines += [
        "",
        "## The service's req/s over each peer's",
        "",
        "Median of the rounds' ratios (lowest to highest); each round measures the implementations back to back.",
        "",
        *_ratio_table(summary),
        "",
        "## At a fixed load (open-loop, keep-alive)",
        "",
        "Each route on each implementation at 50 % and 80 % of the req/s it reached above with keep-alive "
        "clients: `wrk -t16 -c16` (one keep-alive connection per thread) sending on a fixed schedule "
        "(bench/wrk_paced.lua), whatever the server does. p50, p99 and p99.9 count from each request's "
        "intended send time, over every round's requests pooled; a window *queued* when its p50 from the "
        "intended send was over 3 x its p50 from the actual send (requests waited behind a stall). The "
        "busiest worker's share of the workers' CPU, lowest and highest over the windows, shows how the "
        "load split (0.33 is even over 3 workers, 0.50 over 2, 1.00 all on one).",
        "",
        *open_loop.markdown(results["open_loop"]),
        "",
        *_queued_lines(results["open_loop"]),
        *_provider_lines(results["provider_requests"]),
        "",
        "## Targets (keep-alive clients)",
        "",
        "| target | measured | met |",
        "|---|--:|---|",
    ]
    rows = checks(summary, results["open_loop"])
    lines += [f"| {name} | {value} | {'met' if ok else '**not met**'} |" for name, value, ok in rows]
    lines += ["", f"**{sum(ok for _, _, ok in rows)} of {len(rows)} targets met.**"]
    if results.get("pictures"):
        lines += ["", "## Pictures", ""]
        lines += [f"![{name}]({name})" for name in results["pictures"]]
    if results.get("profiles"):
        paths = ", ".join(f"[`{path}`]({path})" for path in results["profiles"])
        lines += ["", f"py-spy profiles of the service's workers, one window per route: {paths}."]
    return "\n".join(lines) + "\n"


def _queued_lines(paced: dict) -> list[str]:
    queued = open_loop.queued_lines(paced)
    return ["Windows that queued:", "", *queued, ""] if queued else ["No window queued.", ""]


def _provider_lines(counted: dict) -> list[str]:
    if not counted["total"]:
        return [
            "Requests that reached the identity provider during the measured windows: 0 (every window "
            "measured the cached path)."
        ]
    return [
        f"**Requests that reached the identity provider during the measured windows: {counted['total']}** "
        "(0 expected: those windows did not measure the cached path alone):",
        "",
        *[f"- {entry}" for entry in counted["windows"]],
    ]
