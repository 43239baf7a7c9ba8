"""Many calls of one Lua script in one round trip, for bulk work such as `users import` (one call per
record took a round trip per record: 100,000 records, 300,000 round trips)."""

from redis.exceptions import NoScriptError

# Calls per pipeline: big enough that round trips stop mattering, small enough to keep replies short.
BATCH = 500


def run_script_many(redis, script, calls: list[tuple[list, list]]) -> list:
    """The result of `script` for each (keys, args) of `calls`, run in one pipeline; a server that lacks
    the script gets it loaded (one round trip) and the calls it refused are sent again."""
    results = [None] * len(calls)
    pending = list(range(len(calls)))
    while pending:
        pipe = redis.pipeline(transaction=False)
        for index in pending:
            keys, args = calls[index]
            # EVALSHA by hand: cluster pipelines refuse Script objects (see store/pokes.py).
            pipe.execute_command("EVALSHA", script.sha, len(keys), *keys, *args)
        missing = []
        for index, result in zip(pending, pipe.execute(raise_on_error=False), strict=True):
            if isinstance(result, NoScriptError):
                missing.append(index)
            elif isinstance(result, Exception):
                raise result
            results[index] = result
        if missing:
            keys, args = calls[missing[0]]
            results[missing[0]] = script(keys=keys, args=args)  # loads it on that server
        pending = missing[1:]
    return results
