"""BENCH_DATA=large: a million profiles (with subject links) and ten million live poke cooldowns,
streamed as raw protocol into `redis-cli --pipe` (faster here than client pipelines or server-side
Lua loops), with the memory each kind of key costs measured from `INFO memory` deltas."""

import json
import subprocess
from collections.abc import Iterator

from dev.services import ROOT

PROFILES = 1_000_000
COOLDOWNS = 10_000_000
CHUNK = 100_000
DAY_MS = 24 * 3600 * 1000


def _command(*words: str) -> str:
    return f"*{len(words)}\r\n" + "".join(f"${len(word.encode())}\r\n{word}\r\n" for word in words)


def _profiles(prefix: str, stats: str, scores: str) -> Iterator[str]:
    """Profiles u0000001…, shaped like Profile.to_hash() with the demo user's stats, and their links."""
    for start in range(1, PROFILES + 1, CHUNK):
        parts = []
        for i in range(start, min(start + CHUNK, PROFILES + 1)):
            name, sub = f"u{i:07d}", f"{i:032x}-sub"
            parts.append(
                _command(
                    "HSET",
                    f"{prefix}user:{{{name}}}",
                    "username",
                    name,
                    "handle",
                    f"@{name}",
                    "display_name",
                    f"User {i}",
                    "stats",
                    stats,
                    "aggregate_scores",
                    scores,
                    "disabled",
                    "0",
                    "sub",
                    sub,
                )
            )
            parts.append(_command("SET", f"{prefix}sub:{sub}", name))
        yield "".join(parts)


def _cooldowns(prefix: str) -> Iterator[str]:
    """Cooldown i: target u(i mod N), ten different pokers per target, TTLs spread over the day, keyed
    exactly as app.store.keys.Keys.cooldown names them."""
    for start in range(0, COOLDOWNS, CHUNK):
        parts = []
        for i in range(start, min(start + CHUNK, COOLDOWNS)):
            target, round_number = i % PROFILES, i // PROFILES
            poker = (target + 1 + round_number * 1013) % PROFILES
            key = f"{prefix}cooldown:{{u{target + 1:07d}}}:u{poker + 1:07d}"
            ttl = str(DAY_MS - i % (DAY_MS - 3_600_000))
            parts.append(f"*5\r\n$3\r\nSET\r\n${len(key)}\r\n{key}\r\n$1\r\n1\r\n$2\r\nPX\r\n${len(ttl)}\r\n{ttl}\r\n")
        yield "".join(parts)


def _pipe(port: int, chunks: Iterator[str]) -> None:
    pipe = subprocess.Popen(["redis-cli", "-p", str(port), "--pipe"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    for chunk in chunks:
        pipe.stdin.write(chunk.encode())
    pipe.stdin.close()
    summary = pipe.stdout.read().decode()
    if pipe.wait() or "errors: 0," not in summary:
        raise RuntimeError(f"redis-cli --pipe failed: {summary[-300:]}")


def _used_memory(client) -> int:
    return int(client.info("memory")["used_memory"])


def preload(client, port: int, prefix: str) -> dict:
    """Write the large data set under `prefix` into the Redis on `port`; returns each kind's count and
    bytes per key, and Redis's used memory afterwards."""
    demo = json.loads((ROOT / "dev" / "demo-users.json").read_text())[0]
    stats, scores = json.dumps(demo.get("stats", {})), json.dumps(demo.get("aggregate_scores", {}))
    sizes = {}
    for kind, count, chunks in (
        ("profile + subject link", PROFILES, _profiles(prefix, stats, scores)),
        ("cooldown", COOLDOWNS, _cooldowns(prefix)),
    ):
        before = _used_memory(client)
        _pipe(port, chunks)
        sizes[kind] = {"keys": count, "bytes_each": round((_used_memory(client) - before) / count, 1)}
    sizes["used_memory_mib"] = round(_used_memory(client) / 2**20)
    return sizes
