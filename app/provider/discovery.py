"""The identity provider as its discovery document (and, for the endpoints discovery may leave out,
its RFC 8414 metadata or the settings) describes it, and its signing keys; all cached."""

import logging
import threading
import time

import requests
from joserfc.errors import JoseError
from joserfc.jwk import JWKRegistry

from ..errors import EndpointNotConfigured, ProviderUnavailable
from ..metrics import provider_call
from .metadata import SERVER_METADATA_MEMBERS, ServerMetadata

SIGNING_KEY_TYPES = {"RSA", "EC", "OKP"}
FAILURE_BACKOFF = 5.0
# The endpoints an operator can name when the provider's documents do not: member -> setting.
ENDPOINT_SETTINGS = {
    "introspection_endpoint": "OIDC_INTROSPECTION_ENDPOINT",
    "revocation_endpoint": "OIDC_REVOCATION_ENDPOINT",
}

log = logging.getLogger(__name__)


def discovery_url(issuer: str) -> str:
    """Where the issuer's discovery document is (OIDC Discovery 4: its trailing slash is dropped)."""
    return f"{issuer.rstrip('/')}/.well-known/openid-configuration"


class Provider:
    """Discovery (cached for `discovery_ttl`) and JWKS (re-read once older than `max_age`, so a key
    the provider removed stops being trusted; re-fetched for an unknown key id or a failed signature
    at most once per `refetch_interval`, so junk tokens cannot flood the provider). While the provider is
    unreachable, a stale copy serves; without one, ProviderUnavailable (503), never "bad token".
    An endpoint comes from discovery, else RFC 8414 metadata, else `configured` (the settings);
    one of `required` found nowhere is EndpointNotConfigured, naming its setting."""

    def __init__(
        self,
        issuer: str,
        *,
        timeout: float,
        discovery_ttl: float,
        refetch_interval: float,
        max_age: float = 600,
        configured: dict[str, str | None] | None = None,
        required: tuple[str, ...] = (),
    ):
        self.issuer = issuer
        self._timeout = timeout
        self._discovery_ttl = discovery_ttl
        self._refetch_interval = refetch_interval
        self.max_age = max_age
        self._http = requests.Session()
        self._lock = threading.RLock()
        self._metadata: dict | None = None
        self._metadata_at = float("-inf")
        self._metadata_failed_at = float("-inf")
        self._keys: dict[str, object] = {}
        self._keyless: list = []
        self._keys_at = float("-inf")  # when the cached keys were read (or last failed to be)
        self._keys_read_at = float("-inf")  # when the cached keys were last read successfully
        self._unknown_kid_at = float("-inf")  # the last refetch spent on an unknown key id or a failed signature
        self._keys_failed = False
        self._configured = {name: url for name, url in (configured or {}).items() if url}
        self._required = required
        self._server_metadata = ServerMetadata(
            issuer, self._get_optional_json, ttl=discovery_ttl, backoff=FAILURE_BACKOFF
        )
        self._unlisted_warned: set[str] = set()

    def metadata(self) -> dict:
        """The discovery document, fetched by one thread at a time and at most every FAILURE_BACKOFF
        seconds while the provider fails."""
        if self._metadata_fresh():
            return self._metadata
        with self._lock:
            if self._metadata_fresh():
                return self._metadata  # another thread fetched it while this one waited
            if time.monotonic() - self._metadata_failed_at >= FAILURE_BACKOFF:
                try:
                    document = self._get_json(discovery_url(self.issuer), "discovery")
                    if document.get("issuer") != self.issuer:
                        raise ProviderUnavailable("discovery names another issuer")
                    self._metadata, self._metadata_at = document, time.monotonic()
                    return document
                except ProviderUnavailable:
                    self._metadata_failed_at = time.monotonic()
            if self._metadata is None:
                raise ProviderUnavailable("no discovery document")
            return self._metadata

    def endpoint(self, name: str) -> str | None:
        """An endpoint URL (or another member, such as its auth methods) from discovery, else from RFC 8414
        metadata, else from the settings; None when none names it, EndpointNotConfigured when it is required."""
        found = self.metadata().get(name)
        if found is None and name in SERVER_METADATA_MEMBERS:
            found = self._server_metadata.document().get(name)
        if found is None:
            found = self._configured.get(name)
        if found is None and name in ENDPOINT_SETTINGS:
            self._unlisted(name)
        return found

    def unresolved(self) -> list[EndpointNotConfigured]:
        """One error (naming its setting) per required endpoint that neither the provider's documents nor
        the settings give; ProviderUnavailable when the documents cannot be read to tell."""
        missing = []
        for name in self._required:
            try:
                self.endpoint(name)
            except EndpointNotConfigured as error:
                missing.append(error)
        return missing

    def key_again(self, kid: str | None, stale):
        """The key named `kid` re-read after a signature failure with `stale` (a provider may rotate a key
        and keep its kid), or None when it was not re-read or did not change. It spends the unknown-kid
        refetch allowance, so forged signatures cost at most one fetch per refetch interval."""
        self._refresh_keys(unknown_kid=True)
        found = self._find(kid)
        return None if found is None or found is stale else found

    def key(self, kid: str | None):
        """The signing key named `kid` (or the only key when `kid` is None), or None when the provider
        has no such key; ProviderUnavailable when its keys could not be fetched to tell."""
        if time.monotonic() - self._keys_at >= self.max_age:
            self._refresh_keys(unknown_kid=False)  # first load or max age: spends no unknown-kid allowance
        found = self._find(kid)
        if found is None and (kid is not None or not self._keys):
            self._refresh_keys(unknown_kid=True)
            found = self._find(kid)
        if found is None and self._keys_failed:
            raise ProviderUnavailable("the provider's signing keys could not be fetched")
        return found

    def keys_trusted_until(self) -> float:
        """The wall-clock time at which the signing keys last read stop being trusted without a re-read."""
        return time.time() + (self._keys_read_at + self.max_age - time.monotonic())

    def _unlisted(self, name: str) -> None:
        setting = ENDPOINT_SETTINGS[name]
        if name in self._required:
            raise EndpointNotConfigured(name, setting)
        if name not in self._unlisted_warned:  # once per process, not on every logout
            self._unlisted_warned.add(name)
            log.warning("the identity provider lists no %s and %s is not set; doing without it", name, setting)

    def _metadata_fresh(self) -> bool:
        return self._metadata is not None and time.monotonic() - self._metadata_at < self._discovery_ttl

    def _find(self, kid: str | None):
        if kid is None:
            every = list(self._keys.values()) + self._keyless
            return every[0] if len(every) == 1 else None
        return self._keys.get(kid)

    def _refresh_keys(self, *, unknown_kid: bool) -> None:
        with self._lock:
            now = time.monotonic()
            if unknown_kid:
                if now - self._unknown_kid_at < self._refetch_interval:
                    return
                self._unknown_kid_at = now
            elif now - self._keys_at < self.max_age:
                return  # another thread re-read them while this one waited
            # A failed read is retried after FAILURE_BACKOFF, not on every request; the old keys serve.
            self._keys_at = now
            try:
                entries = self._get_json(self.metadata()["jwks_uri"], "jwks")["keys"]
                if not isinstance(entries, list):
                    raise TypeError("keys is not a list")
            except (ProviderUnavailable, KeyError, TypeError):
                self._keys_failed = True
                self._keys_at = now - self.max_age + min(FAILURE_BACKOFF, self.max_age)
                return
            keys, keyless = {}, []
            for key in filter(None, map(_signing_key, entries)):
                if key.kid:
                    keys[key.kid] = key
                else:
                    keyless.append(key)
            self._keys, self._keyless, self._keys_failed, self._keys_read_at = keys, keyless, False, now

    def _get_json(self, url: str, endpoint: str) -> dict:
        try:
            with provider_call(endpoint):
                response = self._http.get(url, timeout=self._timeout)
                response.raise_for_status()
                document = response.json()
        except (requests.RequestException, ValueError) as error:
            raise ProviderUnavailable(f"{url}: {type(error).__name__}") from None
        if not isinstance(document, dict):
            raise ProviderUnavailable(f"{url}: not a JSON object")
        return document

    def _get_optional_json(self, url: str, endpoint: str) -> dict | None:
        """The JSON object at `url`; None when the provider answers that it serves none there (a 4xx
        other than 429, or a body that is not a JSON object, such as its login page); ProviderUnavailable
        on a network failure, 429 or 5xx."""
        try:
            with provider_call(endpoint):
                response = self._http.get(url, timeout=self._timeout)
                if 400 <= response.status_code < 500 and response.status_code != 429:
                    return None
                response.raise_for_status()
        except requests.RequestException as error:
            raise ProviderUnavailable(f"{url}: {type(error).__name__}") from None
        try:
            document = response.json()
        except ValueError:  # requests' JSONDecodeError is a RequestException too: caught here, apart
            return None
        return document if isinstance(document, dict) else None


def _signing_key(entry):
    """The public signing key an entry of a JWKS describes, or None for an entry that is not one:
    a provider's one malformed or foreign entry must not take every other key down with it."""
    if not isinstance(entry, dict) or entry.get("kty") not in SIGNING_KEY_TYPES or entry.get("use", "sig") != "sig":
        return None
    try:
        return JWKRegistry.import_key(entry)
    except (JoseError, ValueError, TypeError, KeyError):
        return None
