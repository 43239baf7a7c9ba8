"""The pictures of a `make bench` run, drawn with matplotlib in bench/.venv-plots (never the service's
virtualenv): `python -m bench.plots <results.json> <stem>...` writes, for each stem, <stem>-throughput.png
(req/s by route and implementation), <stem>-p99.png (p50 and p99 at saturation) and <stem>-latency.png
(latency against offered load), all with keep-alive clients, into the results' folder, and prints the
names it wrote. Imports nothing of the service."""

import json
import shutil
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

COLOURS = ("#1b6ca8", "#e07b00", "#7a7a7a", "#2a9d55", "#9b4dca")
DPI = 110


def throughput(results: dict, path: Path) -> None:
    """Median req/s per route and implementation, with the rounds' lowest and highest."""
    routes = results["summary"]["keep-alive"]
    names = list(next(iter(routes.values()))["medians"])
    figure, axes = plt.subplots(figsize=(9, 4.2))
    width = 0.8 / len(names)
    for index, name in enumerate(names):
        medians, lows, highs = [], [], []
        for route in routes:
            rounds = [window["rps"] for window in results["windows"]["keep-alive"][route][name]]
            median = routes[route]["medians"][name]["rps"]
            medians.append(median)
            lows.append(median - min(rounds))
            highs.append(max(rounds) - median)
        positions = [x + (index - (len(names) - 1) / 2) * width for x in range(len(routes))]
        axes.bar(positions, medians, width, label=name, color=COLOURS[index % len(COLOURS)])
        axes.errorbar(positions, medians, yerr=[lows, highs], fmt="none", ecolor="black", capsize=2, linewidth=0.8)
    _finish(axes, list(routes), "req/s (median of the rounds, bars: lowest to highest)", "Throughput, keep-alive")
    figure.savefig(path, dpi=DPI, bbox_inches="tight")
    plt.close(figure)


def tails(results: dict, path: Path) -> None:
    """p99 (bars) and p50 (dots) at saturation per route and implementation."""
    routes = results["summary"]["keep-alive"]
    names = list(next(iter(routes.values()))["medians"])
    figure, axes = plt.subplots(figsize=(9, 4.2))
    width = 0.8 / len(names)
    for index, name in enumerate(names):
        positions = [x + (index - (len(names) - 1) / 2) * width for x in range(len(routes))]
        p99 = [routes[route]["medians"][name]["p99_us"] / 1000 for route in routes]
        p50 = [routes[route]["medians"][name]["p50_us"] / 1000 for route in routes]
        axes.bar(positions, p99, width, label=name, color=COLOURS[index % len(COLOURS)])
        axes.plot(positions, p50, "o", color="black", markersize=3)
    axes.set_yscale("log")
    title = "Latency at saturation, keep-alive: p99 (bars) and p50 (dots)"
    _finish(axes, list(routes), "ms (median of the rounds, log scale)", title)
    figure.savefig(path, dpi=DPI, bbox_inches="tight")
    plt.close(figure)


def latency(results: dict, path: Path) -> None:
    """p50 (dashed) and p99 (solid) against the load: open-loop at 50 % and 80 % of each implementation's
    peak (offered req/s), then closed-loop at saturation (served req/s)."""
    routes = results["summary"]["keep-alive"]
    paced = results["open_loop"]
    figure, panels = plt.subplots(1, len(routes), figsize=(4.2 * len(routes), 4.2), sharey=True)
    for panel, route in zip(panels, routes, strict=True):
        for index, (name, saturated) in enumerate(routes[route]["medians"].items()):
            levels = paced[route][name]
            rates = [level["offered_rps"] for level in levels.values()] + [saturated["rps"]]
            colour = COLOURS[index % len(COLOURS)]
            for key, style in (("p99_us", "-"), ("p50_us", "--")):
                values = [level[key] / 1000 for level in levels.values()] + [saturated[key] / 1000]
                panel.plot(
                    rates,
                    values,
                    style,
                    marker="o",
                    markersize=3,
                    color=colour,
                    label=name if key == "p99_us" else None,
                )
        panel.set_title(route, fontsize=10)
        panel.set_xlabel("req/s")
        panel.set_yscale("log")
        panel.grid(True, which="both", alpha=0.3)
    panels[0].set_ylabel("ms: p99 solid, p50 dashed (log scale)")
    handles, labels = panels[0].get_legend_handles_labels()
    figure.legend(handles, labels, loc="lower center", ncol=len(labels), fontsize=8, bbox_to_anchor=(0.5, -0.06))
    figure.suptitle(
        "Latency against load, keep-alive: open-loop at 50 % and 80 % of each one's peak (offered req/s), "
        "then saturation (served)"
    )
    figure.savefig(path, dpi=DPI, bbox_inches="tight")
    plt.close(figure)


def _finish(axes, routes: list[str], ylabel: str, title: str) -> None:
    axes.set_xticks(range(len(routes)), routes)
    axes.set_ylabel(ylabel)
    axes.set_title(title)
    axes.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    axes.grid(True, axis="y", alpha=0.3)


def main(source: str, *stems: str) -> None:
    results = json.loads(Path(source).read_text())
    folder = Path(source).parent
    for kind, draw in (("throughput", throughput), ("p99", tails), ("latency", latency)):
        first = folder / f"{stems[0]}-{kind}.png"
        draw(results, first)
        for stem in stems[1:]:
            shutil.copyfile(first, folder / f"{stem}-{kind}.png")
        print(*(f"{stem}-{kind}.png" for stem in stems))


if __name__ == "__main__":
    main(*sys.argv[1:])
