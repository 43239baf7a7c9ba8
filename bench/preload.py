"""BENCH_DATA=large: a million profiles (with subject links) and ten million live poke cooldowns,
written by server-side Lua loops in batches (far faster than any client pipeline), with the memory
each kind of key costs measured from `INFO memory` deltas."""

import json

from dev.services import ROOT

PROFILES = 1_000_000
COOLDOWNS = 10_000_000
BATCH = 100_000
DAY_MS = 24 * 3600 * 1000

# Profiles u0000001…, shaped like Profile.to_hash() with the demo user's stats, and their links.
_PROFILES = """
local prefix, first, last, stats, scores = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4], ARGV[5]
for i = first, last do
  local name, sub = string.format('u%07d', i), string.format('%032x-sub', i)
  redis.call('HSET', prefix .. 'user:{' .. name .. '}', 'username', name, 'handle', '@' .. name,
    'display_name', 'User ' .. i, 'stats', stats, 'aggregate_scores', scores, 'disabled', '0', 'sub', sub)
  redis.call('SET', prefix .. 'sub:' .. sub, name)
end
return last - first + 1
"""

# Cooldown i: target u(i mod N), poker ten different users per target, TTLs spread over the day,
# keyed exactly as app.store.keys.Keys.cooldown names them.
_COOLDOWNS = """
local prefix, first, last, n, day = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
for i = first, last do
  local target, round = i % n, math.floor(i / n)
  local poker = (target + 1 + round * 1013) % n
  local key = string.format('%scooldown:{u%07d}:u%07d', prefix, target + 1, poker + 1)
  redis.call('SET', key, '1', 'PX', day - (i % (day - 3600000)))
end
return last - first + 1
"""


def _used_memory(client) -> int:
    return int(client.info("memory")["used_memory"])


def preload(client, prefix: str) -> dict:
    """Write the large data set under `prefix`; returns counts, seconds and bytes per key."""
    demo = json.loads((ROOT / "dev" / "demo-users.json").read_text())[0]
    stats, scores = json.dumps(demo.get("stats", {})), json.dumps(demo.get("aggregate_scores", {}))
    profiles, cooldowns = client.register_script(_PROFILES), client.register_script(_COOLDOWNS)
    sizes = {}
    for kind, script, count, extra in (
        ("profile + subject link", profiles, PROFILES, [stats, scores]),
        ("cooldown", cooldowns, COOLDOWNS, [PROFILES, DAY_MS]),
    ):
        before = _used_memory(client)
        for first in range(0 if kind == "cooldown" else 1, count, BATCH):
            last = min(first + BATCH - 1, count - (1 if kind == "cooldown" else 0))
            script(args=[prefix, first, last, *extra])
        sizes[kind] = {"keys": count, "bytes_each": round((_used_memory(client) - before) / count, 1)}
    sizes["used_memory_mib"] = round(_used_memory(client) / 2**20)
    return sizes
