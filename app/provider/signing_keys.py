"""The provider's signing keys (its JWKS), cached: re-read once older than their max age, re-fetched for
an unknown key id or a failed signature no more than the refetch interval allows, stale while it fails."""

import threading
import time
from collections.abc import Callable

from joserfc.errors import JoseError
from joserfc.jwk import JWKRegistry

from ..errors import ProviderUnavailable

SIGNING_KEY_TYPES = {"RSA", "EC", "OKP"}


class SigningKeys:
    """The keys of the JWKS that `fetch` reads, re-read once older than `max_age` (so a key the provider
    removed stops being trusted), and re-fetched for an unknown key id or a failed signature at most once
    per `refetch_interval` (so junk tokens cannot flood the provider). A failed read is retried after
    `backoff`, the old keys serving meanwhile; without any, ProviderUnavailable, never "bad token"."""

    def __init__(self, fetch: Callable[[], dict], *, max_age: float, refetch_interval: float, backoff: float):
        self._fetch = fetch  # the JWKS document; ProviderUnavailable when it cannot be read
        self.max_age = max_age
        self._refetch_interval = refetch_interval
        self._backoff = backoff
        self._lock = threading.Lock()
        self._keys: dict[str, object] = {}
        self._keyless: list = []
        self._keys_at = float("-inf")  # when the cached keys were read (or last failed to be)
        self._keys_read_at = float("-inf")  # when the cached keys were last read successfully
        self._unknown_kid_at = float("-inf")  # the last refetch spent on an unknown key id or a failed signature
        self._keys_failed = False

    def key(self, kid: str | None):
        """The signing key named `kid` (or the only key when `kid` is None), or None when the provider
        has no such key; ProviderUnavailable when its keys could not be fetched to tell."""
        if time.monotonic() - self._keys_at >= self.max_age:
            self._refresh(unknown_kid=False)  # first load or max age: spends no unknown-kid allowance
        found = self._find(kid)
        if found is None and (kid is not None or not self._keys):
            self._refresh(unknown_kid=True)
            found = self._find(kid)
        if found is None and self._keys_failed:
            raise ProviderUnavailable("the provider's signing keys could not be fetched")
        return found

    def key_again(self, kid: str | None, stale):
        """The key named `kid` re-read after a signature failure with `stale` (a provider may rotate a key
        and keep its kid), or None when it was not re-read or did not change. It spends the unknown-kid
        refetch allowance, so forged signatures cost at most one fetch per refetch interval."""
        self._refresh(unknown_kid=True)
        found = self._find(kid)
        return None if found is None or found is stale else found

    def trusted_until(self) -> float:
        """The wall-clock time at which the keys last read stop being trusted without a re-read."""
        return time.time() + (self._keys_read_at + self.max_age - time.monotonic())

    def _find(self, kid: str | None):
        if kid is None:
            every = list(self._keys.values()) + self._keyless
            return every[0] if len(every) == 1 else None
        return self._keys.get(kid)

    def _refresh(self, *, unknown_kid: bool) -> None:
        with self._lock:
            now = time.monotonic()
            if unknown_kid:
                if now - self._unknown_kid_at < self._refetch_interval:
                    return
                self._unknown_kid_at = now
            elif now - self._keys_at < self.max_age:
                return  # another thread re-read them while this one waited
            # A failed read is retried after the backoff, not on every request; the old keys serve.
            self._keys_at = now
            try:
                entries = self._fetch()["keys"]
                if not isinstance(entries, list):
                    raise TypeError("keys is not a list")
            except (ProviderUnavailable, KeyError, TypeError):
                self._keys_failed = True
                self._keys_at = now - self.max_age + min(self._backoff, self.max_age)
                return
            keys, keyless = {}, []
            for key in filter(None, map(_signing_key, entries)):
                if key.kid:
                    keys[key.kid] = key
                else:
                    keyless.append(key)
            self._keys, self._keyless, self._keys_failed, self._keys_read_at = keys, keyless, False, now


def _signing_key(entry):
    """The public signing key an entry of a JWKS describes, or None for an entry that is not one:
    a provider's one malformed or foreign entry must not take every other key down with it."""
    if not isinstance(entry, dict) or entry.get("kty") not in SIGNING_KEY_TYPES or entry.get("use", "sig") != "sig":
        return None
    try:
        return JWKRegistry.import_key(entry)
    except (JoseError, ValueError, TypeError, KeyError):
        return None
