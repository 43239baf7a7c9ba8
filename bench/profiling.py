"""Where the time goes: py-spy samples every server process while wrk drives one route, and the
folded stacks are summed into the functions that hold the most samples, by themselves and in all."""

import collections
import shutil
import subprocess
import sys
from pathlib import Path

from .cpu import process_tree
from .load import Window, drive
from .servers import STATE, Server

TOP = 25


def profile_route(name: str, server: Server, window: Window, seconds: float, results: Path, redis_pid: int) -> dict:
    """Sample `server`'s processes for `seconds` under wrk; write results/profile-`name`.txt and return
    the wrk figures of that window."""
    spy = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    outputs, samplers = [], []
    for pid in process_tree(server.process.pid):
        output = STATE / f"profile-{name}-{pid}.txt"
        outputs.append(output)
        samplers.append(
            subprocess.Popen(
                [
                    spy,
                    "record",
                    "--pid",
                    str(pid),
                    "--duration",
                    str(round(seconds)),
                    "--rate",
                    "200",
                    "--nonblocking",
                    "--format",
                    "raw",
                    "--output",
                    str(output),
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        )
    figures = drive(f"{name} (profiled)", window, server.process.pid, redis_pid, seconds)
    for sampler in samplers:
        sampler.wait()
    stacks = collections.Counter()
    for output in outputs:
        if output.exists():
            for line in output.read_text().splitlines():
                stack, _, count = line.rpartition(" ")
                if count.isdigit():
                    stacks[stack] += int(count)
    (results / f"profile-{name}.txt").write_text(_report(name, stacks))
    return figures


def _report(name: str, stacks: collections.Counter) -> str:
    total = sum(stacks.values()) or 1
    own, inclusive = collections.Counter(), collections.Counter()
    for stack, count in stacks.items():
        frames = stack.split(";")
        own[frames[-1]] += count
        for frame in set(frames):
            inclusive[frame] += count
    lines = [
        f"py-spy samples of every process serving {name}: {total} samples (non-idle threads, 200 Hz)",
        "",
        f"Top {TOP} by own samples:",
    ]
    lines += [f"{100 * count / total:5.1f} %  {frame}" for frame, count in own.most_common(TOP)]
    lines += ["", f"Top {TOP} by inclusive samples:"]
    lines += [f"{100 * count / total:5.1f} %  {frame}" for frame, count in inclusive.most_common(TOP)]
    return "\n".join(lines) + "\n"
