"""How many unknown access tokens the provider has been asked about, per client, per network and in a
pool shared by all, in fixed windows counted in Redis (so the bounds hold across workers and
instances); and the provider's own request to back off, shared the same way."""

from limits import parse

from ..addresses import IPV6_SITE_BITS, client_networks
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
    """Admits a provider call about an unknown token sent from an address: at most `per_client` (such
    as '30 per minute') for the address (an IPv6 /64), `per_network` for its IPv4 /24 or IPv6 /56 and
    twice that for its IPv6 /48 (app/addresses.py), and from a pool of `total` shared by everyone. Once
    the pool is spent, a network (its widest one) still gets what one client may spend: a flood from
    other networks never takes that share away."""

    def __init__(self, redis, keys, *, per_client: str, per_network: str, total: str):
        self._keys = keys
        self._count = redis.register_script(_COUNT)
        self._per_client = _window(per_client)
        self._per_network = _window(per_network)
        self._total = _window(total)

    def admit(self, address: str | None) -> None:
        """Count one call for `address`; TooManyTokenChecks (429) beyond its own or one of its networks'
        bounds, TokenChecksExhausted (503) when the pool is spent and so is its network's share. The
        narrow bounds come first, so a flood spends no more of the wider ones than they allow."""
        count = 0
        for depth, tier in enumerate(client_networks(address)):
            calls, seconds = self._bound(depth, tier)
            count, left = self._count(keys=[self._keys.token_checks_of(tier)], args=[seconds])
            if count > calls:
                raise TooManyTokenChecks(max(1, int(left)), network=depth > 0)
        spent, left = self._count(keys=[self._keys.token_checks()], args=[self._total[1]])
        if spent > self._total[0] and count > self._per_client[0]:
            raise TokenChecksExhausted(max(1, int(left)))

    def _bound(self, depth: int, tier: str) -> tuple[int, int]:
        if depth == 0:
            return self._per_client
        calls, seconds = self._per_network
        return (2 * calls if tier.endswith(f"/{IPV6_SITE_BITS}") else calls), seconds


class ProviderBackoff:
    """When the provider asked every instance to stop calling it (429 or 503 with Retry-After)."""

    def __init__(self, redis, keys):
        self._redis = redis
        self._key = keys.introspection_backoff()

    def until(self) -> float:
        """The time (epoch seconds) before which no instance calls the provider; 0 when none is set."""
        value = self._redis.get(self._key)
        return float(value) if value is not None else 0.0

    def start(self, until: float, *, now: float) -> None:
        """No instance calls the provider before `until`."""
        self._redis.set(self._key, repr(until), px=max(1, int((until - now) * 1000)))


def _window(limit: str) -> tuple[int, int]:
    """(calls, seconds) of a limit such as '30 per minute'."""
    item = parse(limit)
    return item.amount, item.get_expiry()
