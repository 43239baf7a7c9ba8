"""How many unknown access tokens the provider has been asked about: per client and in total, in
fixed windows counted in Redis, so the bounds hold across workers and instances."""

from limits import parse

from ..errors import TokenChecksExhausted, TooManyTokenChecks

# Counts one more in the window of KEYS[1] and says how many there are and how long the window has
# left. One key per call, so a Redis Cluster serves it from that key's slot.
_COUNT = """
local count = redis.call('INCR', KEYS[1])
local left = redis.call('TTL', KEYS[1])
if left < 0 then
  redis.call('EXPIRE', KEYS[1], ARGV[1])  -- a new window (or one that lost its TTL)
  left = tonumber(ARGV[1])
end
return {count, left}
"""


class TokenChecks:
    """Admits a provider call about an unknown token: at most `per_client` (such as '30 per minute')
    for one client and `total` for all of them together."""

    def __init__(self, redis, keys, *, per_client: str, total: str):
        self._keys = keys
        self._count = redis.register_script(_COUNT)
        self._per_client = _window(per_client)
        self._total = _window(total)

    def admit(self, client: str) -> None:
        """Count one call for `client`; TooManyTokenChecks (429) beyond its bound, TokenChecksExhausted
        (503) beyond the total. The client's bound is checked first, so a flood from one client spends
        no more of the total than its own bound."""
        count, left = self._count(keys=[self._keys.token_checks_of(client)], args=[self._per_client[1]])
        if count > self._per_client[0]:
            raise TooManyTokenChecks(max(1, int(left)))
        count, left = self._count(keys=[self._keys.token_checks()], args=[self._total[1]])
        if count > self._total[0]:
            raise TokenChecksExhausted(max(1, int(left)))


def _window(limit: str) -> tuple[int, int]:
    """(calls, seconds) of a limit such as '30 per minute'."""
    item = parse(limit)
    return item.amount, item.get_expiry()
