"""CPU accounting for every measurement in bench/: the CPU time and context switches of a process and of
everything it started, read from Linux's /proc, per process so that a window can tell how the work
split over a server's workers."""

import os
import resource
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

TICKS = os.sysconf("SC_CLK_TCK")


def process_tree(pid: int) -> list[int]:
    """`pid` and every process it started, recursively (a server's master and workers)."""
    pids, index = [pid], 0
    while index < len(pids):
        for task in Path(f"/proc/{pids[index]}/task").glob("*"):
            with suppress(OSError):  # the task ended meanwhile
                pids += [int(child) for child in (task / "children").read_text().split()]
        index += 1
    return pids


def process_seconds(pid: int) -> float:
    """User plus system CPU seconds `pid` has used so far (all its threads); 0 once it has ended."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / TICKS


def cpu_seconds(pids: list[int]) -> float:
    """User plus system CPU seconds used so far by `pids` (those still alive)."""
    return sum(process_seconds(pid) for pid in pids)


def context_switches(pid: int) -> int:
    """Voluntary and involuntary context switches of every thread of `pid` so far."""
    total = 0
    for status in Path(f"/proc/{pid}/task").glob("*/status"):
        with suppress(OSError):
            for line in status.read_text().splitlines():
                if "ctxt_switches:" in line:
                    total += int(line.split(":")[1])
    return total


def children_seconds() -> float:
    """CPU seconds of this process's children that have ended (a load generator, around its run)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


@dataclass
class Reading:
    """The CPU seconds and context switches of each process of a tree at one moment."""

    seconds: dict[int, float]
    switches: dict[int, int]

    @classmethod
    def of(cls, pids: list[int]) -> "Reading":
        return cls({pid: process_seconds(pid) for pid in pids}, {pid: context_switches(pid) for pid in pids})

    def since(self, earlier: "Reading") -> dict:
        """CPU seconds and context switches per process between `earlier` and this reading, with totals."""
        seconds = {pid: self.seconds[pid] - earlier.seconds.get(pid, 0.0) for pid in self.seconds}
        switches = {pid: self.switches[pid] - earlier.switches.get(pid, 0) for pid in self.switches}
        return {
            "seconds": sum(seconds.values()),
            "switches": sum(switches.values()),
            "per_process": {str(pid): round(value, 3) for pid, value in seconds.items()},
        }
