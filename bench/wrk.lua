-- wrk script of `make bench`: counts non-2xx responses per thread and, when wrk is done, prints
-- one line `BENCH {json}` with the figures bench/load.py reads.
-- With arguments `-- <first> <stride>` it POSTs {"username": "t<n>"} with n = first + thread id,
-- then + stride each request, so every request pokes a target never poked before.

local threads = {}

function setup(thread)
  thread:set("id", #threads)
  table.insert(threads, thread)
end

local function poke()
  local body = string.format('{"username": "t%07d"}', index)
  last, index = index, index + stride
  return wrk.format(nil, nil, nil, body)
end

function init(args)
  bad, bad_status, last = 0, 0, 0
  if args[1] then
    index, stride = tonumber(args[1]) + id, tonumber(args[2])
    wrk.method = "POST"
    wrk.headers["Content-Type"] = "application/json"
    request = poke
  end
end

function response(status)
  if status < 200 or status > 299 then
    bad, bad_status = bad + 1, status
  end
end

function done(summary, latency)
  local non_2xx, status, last_target = 0, 0, 0
  for _, thread in ipairs(threads) do
    non_2xx = non_2xx + thread:get("bad")
    status = math.max(status, thread:get("bad_status"))
    last_target = math.max(last_target, thread:get("last"))
  end
  local e = summary.errors
  io.write(string.format(
    'BENCH {"requests": %d, "duration_us": %d, "p50_us": %d, "p99_us": %d, "non_2xx": %d, '
      .. '"bad_status": %d, "socket_errors": %d, "last_target": %d}\n',
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(99), non_2xx,
    status, e.connect + e.read + e.write + e.timeout, last_target))
end
