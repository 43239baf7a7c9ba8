"""What introspection learnt about each token, by the token's hash: kept in a small map in each process
and in Redis, which every worker and instance shares, so a token costs one provider call per fleet."""

import base64
import hashlib
import json
import math
import threading
from collections import OrderedDict
from dataclasses import asdict, dataclass

from ..store.introspections import Introspections
from .principal import Principal

# An answer is reused while fresh (INTROSPECTION_CACHE_TTL, never past exp); after that it is kept until
# the token expires, at most this long (s), to say "seen valid": asking again then needs no admission.
SEEN_VALID_MAX = 86_400


def token_digest(token: str) -> str:
    """The name a token is known by (base64url SHA-256): memory and Redis never hold a token itself."""
    return base64.urlsafe_b64encode(hashlib.sha256(token.encode()).digest()).rstrip(b"=").decode()


@dataclass(frozen=True)
class Known:
    """What the provider said of a token: its principal, or a refusal's message; fresh until `until`."""

    principal: Principal | None
    refusal: str | None
    until: float

    def fresh(self, now: float) -> bool:
        return now < self.until


class Remembered:
    """A bounded map from token digest to a value kept until a deadline; the oldest goes first."""

    def __init__(self, size: int):
        self._entries: OrderedDict[str, tuple[object, float]] = OrderedDict()
        self._size = size
        self._lock = threading.Lock()

    def get(self, digest: str, now: float):
        """The value kept for `digest`, or None when there is none or its time is up."""
        entry = self._entries.get(digest)
        return entry[0] if entry is not None and now < entry[1] else None

    def put(self, digest: str, value, until: float) -> None:
        with self._lock:
            self._entries[digest] = (value, until)
            self._entries.move_to_end(digest)
            if len(self._entries) > self._size:
                self._entries.popitem(last=False)


class Answers:
    """Answers and refusals, each kept in this process while fresh and in Redis for every instance."""

    def __init__(self, shared: Introspections, *, cache_size: int = 10_000):
        self._shared = shared
        self._answers = Remembered(cache_size)
        self._refusals = Remembered(cache_size)  # apart, so junk tokens never push out valid answers

    def known(self, digest: str, now: float) -> Known | None:
        """What is known of the token of `digest`: fresh from this process, else as Redis keeps it (an
        answer past its freshness says the token was seen valid); None for a token never seen."""
        local = self._answers.get(digest, now) or self._refusals.get(digest, now)
        if local is not None:
            return local
        value = self._shared.get(digest)
        known = _decoded(value) if value is not None else None
        if known is not None and known.fresh(now):
            (self._refusals if known.principal is None else self._answers).put(digest, known, known.until)
        return known

    def answer(self, digest: str, principal: Principal, *, until: float, now: float) -> None:
        """Remember `principal` for the token, fresh until `until`, and as seen valid until it expires."""
        known = Known(principal, None, until)
        self._answers.put(digest, known, until)
        kept = min(principal.expires_at, now + SEEN_VALID_MAX)
        self._shared.put(digest, _encoded(known), ttl=max(kept, until) - now)

    def refuse(self, digest: str, message: str, *, until: float, now: float) -> None:
        """Remember the token as refused with `message` until `until` (it is no longer seen valid)."""
        known = Known(None, message, until)
        self._refusals.put(digest, known, until)
        self._shared.put(digest, _encoded(known), ttl=until - now)


def _encoded(known: Known) -> bytes:
    if known.principal is None:
        return json.dumps({"refused": known.refusal, "until": known.until}).encode()
    principal = asdict(known.principal)
    principal["scopes"] = sorted(principal["scopes"])
    principal["expires_at"] = principal["expires_at"] if math.isfinite(principal["expires_at"]) else None
    return json.dumps({"principal": principal, "until": known.until}).encode()


def _decoded(value: bytes) -> Known | None:
    """The Known of an encoded value; None for anything else (another release's shape: as never seen)."""
    try:
        data = json.loads(value)
        if "refused" in data:
            return Known(None, str(data["refused"]), float(data["until"]))
        fields = dict(data["principal"])
        fields["scopes"] = frozenset(fields["scopes"])
        fields["expires_at"] = math.inf if fields["expires_at"] is None else float(fields["expires_at"])
        return Known(Principal(**fields), None, float(data["until"]))
    except (ValueError, TypeError, KeyError, AttributeError):
        return None
