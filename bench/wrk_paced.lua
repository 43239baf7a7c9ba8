-- Open-loop wrk script of `make bench`: each wrk thread holds one keep-alive connection (run wrk with
-- as many threads as connections) and sends on a fixed schedule, one request every 1/rate s from a
-- random start, whatever the server does. A request's latency counts from its intended send time, or
-- from the actual one when the timer fired early, so a stall delays every request scheduled behind it
-- (and the latency shows it) instead of slowing the sender down. Arguments:
-- `-- <requests per second per connection> [<first poke target> <stride>]` (as bench/wrk.lua).
-- Prints `BENCH {json}` with wrk.lua's counts and two histograms of latency in µs (from the intended
-- and from the actual send), as {bucket: count} with bucket = floor(log(µs) / log(1.01)).

dofile("bench/wrk.lua")

local ffi = require("ffi")
ffi.cdef([[
  typedef struct { long tv_sec; long tv_nsec; } bench_timespec;
  int clock_gettime(int clock, bench_timespec *now);
]])
local MONOTONIC = 1
local clock = ffi.new("bench_timespec")
local STEP = math.log(1.01)

local function now_us()
  ffi.C.clock_gettime(MONOTONIC, clock)
  return tonumber(clock.tv_sec) * 1e6 + tonumber(clock.tv_nsec) / 1e3
end

local function bucket(us)
  return math.floor(math.log(math.max(us, 1)) / STEP)
end

local threads = {}

function setup(thread)
  thread:set("id", #threads)
  table.insert(threads, thread)
end

local closed_init = init
local paced

function init(args)
  math.randomseed(os.time() * 1000 + id)
  interval = 1e6 / tonumber(args[1])
  request = nil
  closed_init({ args[2], args[3] })
  build = request or function()
    return wrk.request()
  end
  request = paced
  intended, sent, next_send = 0, 0, nil
  from_intended, from_sent, late = {}, {}, 0
end

function delay()
  local now = now_us()
  if not next_send then
    next_send = now + math.random() * interval
  end
  return math.max(0, math.floor((next_send - now) / 1000))
end

function paced()
  sent = now_us()
  next_send = next_send or sent
  intended = math.min(next_send, sent)
  if sent - next_send > interval then
    late = late + 1
  end
  next_send = next_send + interval
  return build()
end
request = paced

function response(status)
  local done_at = now_us()
  local a, b = bucket(done_at - intended), bucket(done_at - sent)
  from_intended[a] = (from_intended[a] or 0) + 1
  from_sent[b] = (from_sent[b] or 0) + 1
  if status < 200 or status > 299 then
    bad, bad_status = bad + 1, status
  end
end

local function merged(name)
  local sum = {}
  for _, thread in ipairs(threads) do
    for key, count in pairs(thread:get(name)) do
      sum[key] = (sum[key] or 0) + count
    end
  end
  local parts = {}
  for key, count in pairs(sum) do
    table.insert(parts, string.format('"%d": %d', key, count))
  end
  return "{" .. table.concat(parts, ", ") .. "}"
end

function done(summary)
  local non_2xx, status, last_target, behind = 0, 0, 0, 0
  for _, thread in ipairs(threads) do
    non_2xx = non_2xx + thread:get("bad")
    status = math.max(status, thread:get("bad_status"))
    last_target = math.max(last_target, thread:get("last"))
    behind = behind + thread:get("late")
  end
  local e = summary.errors
  io.write(string.format(
    'BENCH {"requests": %d, "duration_us": %d, "non_2xx": %d, "bad_status": %d, "socket_errors": %d, '
      .. '"last_target": %d, "late": %d, "from_intended": %s, "from_sent": %s}\n',
    summary.requests, summary.duration, non_2xx, status, e.connect + e.read + e.write + e.timeout,
    last_target, behind, merged("from_intended"), merged("from_sent")))
end
