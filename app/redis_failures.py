"""How Redis fails, as the service tells it apart: unreachable or too slow, full (`noeviction`), or
refusing while a failover settles. Each is a 503 with Retry-After (app.error_responses), never a 500."""

import redis

REDIS_DOWN = (
    redis.ConnectionError,
    redis.TimeoutError,
    redis.exceptions.ClusterError,
    redis.exceptions.RedisClusterException,
)


# Refusals of a Redis in the middle of a failover: a demoted master (READONLY, or UNBLOCKED in WAIT), too
# few replicas for `min-replicas-to-write` (NOREPLICAS), a slot changing hands (TRYAGAIN).
FAILOVER_REFUSALS = ("READONLY", "UNBLOCKED", "NOREPLICAS", "TRYAGAIN")


def is_failover_refusal(error: BaseException) -> bool:
    """Redis refusing a command while a failover settles, which it serves again once it has."""
    code = getattr(error, "status_code", None) or str(error).partition(" ")[0]
    return isinstance(error, redis.ResponseError) and (
        isinstance(error, redis.exceptions.ReadOnlyError | redis.exceptions.TryAgainError) or code in FAILOVER_REFUSALS
    )


def is_out_of_memory(error: BaseException) -> bool:
    """Redis refusing a write under `maxmemory` (`-OOM`, also when it comes back from a script)."""
    return isinstance(error, redis.exceptions.OutOfMemoryError) or (
        isinstance(error, redis.ResponseError) and "command not allowed when used memory" in str(error)
    )
