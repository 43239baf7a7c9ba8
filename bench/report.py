"""The Markdown of `make bench`: the best ceiling, the routes under the shipped config, the targets."""

from .tracing_cost import tracing_lines

TARGETS = {"public_profile": 0.75, "own_profile_bearer": 0.70, "own_profile_cookie": 0.60, "poke": 0.60}
P99_OVER_P50 = 2.5
METRICS_OVERHEAD_MAX = 0.03
LARGE_DRIFT_MAX = 0.05


def checks(results: dict) -> list[tuple[str, str, bool]]:
    """(target, measured, met) for every target of the run."""
    rows = []
    for name, goal in TARGETS.items():
        ratio = results["routes"][name]["ratio"]
        rows.append((f"{name}: ratio to best ceiling ≥ {goal:.2f}", f"{ratio:.2f}", ratio >= goal))
    for name, row in results["routes"].items():
        spread = row["p99_ms"] / row["p50_ms"]
        rows.append((f"{name}: p99 ≤ {P99_OVER_P50} x p50", f"{spread:.1f} x p50", spread <= P99_OVER_P50))
    rows.append(
        ("identity-provider requests in the windows = 0", str(results["idp_requests"]), results["idp_requests"] == 0)
    )
    overhead = results["metrics_overhead"]
    rows.append(
        (
            f"metrics cost on poke < {METRICS_OVERHEAD_MAX:.0%}: windows with and without, median pair",
            f"{overhead['overhead']:+.1%}",
            overhead["overhead"] < METRICS_OVERHEAD_MAX,
        )
    )
    rows.append(
        (
            f"metrics cost on poke < {METRICS_OVERHEAD_MAX:.0%}: the metrics code timed alone",
            f"{overhead['code_overhead']:+.1%}",
            overhead["code_overhead"] < METRICS_OVERHEAD_MAX,
        )
    )
    if "large" in results:
        for name, row in results["large"]["routes"].items():
            drift = row["drift"]
            rows.append(
                (
                    f"{name}: large-data ratio within {LARGE_DRIFT_MAX:.0%}",
                    f"{drift:+.1%}",
                    abs(drift) <= LARGE_DRIFT_MAX,
                )
            )
    return rows


def _route_rows(routes: dict, splits: dict) -> list[str]:
    header = (
        "| route | req/s | p50 ms | p99 ms | p99/p50 | ratio to best ceiling | same-config ratio | worker CPU split % |"
    )
    lines = [header, "|---|--:|--:|--:|--:|--:|--:|--:|"]
    for name, row in routes.items():
        lines.append(
            f"| {name} | {row['rps']:.0f} | {row['p50_ms']:.2f} | {row['p99_ms']:.2f} | "
            f"{row['p99_ms'] / row['p50_ms']:.1f} | {row.get('ratio', 1):.2f} | "
            f"{row.get('same_config_ratio', 1):.2f} | {splits.get(name, '')} |"
        )
    return lines


def markdown(results: dict, splits: dict, machine: str) -> str:
    """The whole report."""
    best = results["best_ceiling"]
    lines = [
        "# Benchmark",
        "",
        machine,
        "",
        "## The best ceiling of the run",
        "",
        "A bare Flask route (`bench/ceiling.py`) under every candidate gunicorn config:",
        "",
        "| config | req/s | p50 ms | p99 ms |",
        "|---|--:|--:|--:|",
    ]
    for name, row in results["ceilings"].items():
        mark = " **(best)**" if name == best["config"] else ""
        lines.append(f"| {name}{mark} | {row['rps']:.0f} | {row['p50_ms']:.2f} | {row['p99_ms']:.2f} |")
    lines += ["", f"## Routes under the shipped config ({results['shipped_config']})", ""]
    same = results["same_config_ceiling"]
    lines += _route_rows({"same-config ceiling (mean of before/after)": same, **results["routes"]}, splits)
    overhead = results["metrics_overhead"]
    pairs = overhead["pairs"]
    lines += [
        "",
        f"Metrics on the poke route, same run, {len(pairs)} pairs of windows with and without "
        f"`METRICS_TOKEN` in ABBA order: {overhead['with_cpu_us']:.0f} µs of server CPU per request with "
        f"({overhead['with_rps']:.0f} req/s), {overhead['without_cpu_us']:.0f} µs without "
        f"({overhead['without_rps']:.0f} req/s); median pair {overhead['overhead']:+.1%} CPU per request "
        f"(pairs from {pairs[0]:+.1%} to {pairs[-1]:+.1%}). The metrics code of a poke timed alone "
        f"(`python -m bench.metrics_code`): {overhead['code_us']:.1f} µs, "
        f"{overhead['code_overhead']:.1%} of a poke's CPU without metrics.",
    ]
    routes = results["routes"]
    if "own_profile_dpop" in routes and "cpu_us" in routes["own_profile_dpop"]:
        dpop, bearer = routes["own_profile_dpop"], routes["own_profile_bearer"]
        lines += [
            "",
            f"DPoP beside bearer on the own profile, same run: {dpop['rps']:.0f} vs {bearer['rps']:.0f} req/s "
            f"({dpop['rps'] / bearer['rps'] - 1:+.1%}), {dpop['cpu_us']:.0f} vs {bearer['cpu_us']:.0f} µs of server "
            f"CPU per request ({dpop['cpu_us'] - bearer['cpu_us']:+.0f} µs: one proof verified and one Redis "
            "`SET NX EX` of its jti).",
        ]
    if "tracing" in results:
        lines += tracing_lines(results["tracing"])
    if "large" in results:
        large = results["large"]
        lines += [
            "",
            "## BENCH_DATA=large",
            "",
            f"Preloaded in {large['preload_seconds']:.0f} s: "
            + ", ".join(
                f"{v['keys']:,} {k} keys at {v['bytes_each']:.0f} bytes each (`INFO memory` delta)"
                for k, v in large["sizes"].items()
                if isinstance(v, dict)
            )
            + f"; Redis used_memory {large['sizes']['used_memory_mib']} MiB.",
            "",
        ]
        lines += [
            "| route | req/s | p50 ms | p99 ms | same-config ratio, empty → large | drift |",
            "|---|--:|--:|--:|--:|--:|",
        ]
        for name, row in large["routes"].items():
            ratios = f"{row['empty_ratio']:.2f} → {row['same_config_ratio']:.2f}"
            lines.append(
                f"| {name} | {row['rps']:.0f} | {row['p50_ms']:.2f} | {row['p99_ms']:.2f} | {ratios} | "
                f"{row['drift']:+.1%} |"
            )
    lines += ["", "## Targets", "", "| target | measured | met |", "|---|--:|---|"]
    lines += [f"| {name} | {value} | {'met' if ok else '**not met**'} |" for name, value, ok in checks(results)]
    if results.get("profiles"):
        lines += [
            "",
            "Where the time goes on the routes that missed a target (py-spy, every worker): "
            + ", ".join(f"[`{path}`]({path})" for path in results["profiles"])
            + ".",
        ]
    return "\n".join(lines) + "\n"
