"""The identity provider as its discovery document (and, for the endpoints discovery may leave out,
its RFC 8414 metadata or the settings) describes it, cached; its signing keys are app.provider.signing_keys'."""

import logging
import threading
import time

import requests

from ..errors import EndpointNotConfigured, ProviderUnavailable
from ..metrics import provider_call
from .dropped import sent_again_if_dropped
from .metadata import SERVER_METADATA_MEMBERS, ServerMetadata
from .signing_keys import SigningKeys

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
    """Discovery (cached for `discovery_ttl`) and, in `signing_keys`, its JWKS (see SigningKeys for
    `max_age` and `refetch_interval`). While the provider is unreachable, a stale copy serves; without
    one, ProviderUnavailable (503), never "bad token". An endpoint comes from discovery, else RFC 8414
    metadata, else `configured` (the settings); one of `required` found nowhere is EndpointNotConfigured,
    naming its setting."""

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
        self._http = requests.Session()
        self._lock = threading.Lock()
        self._metadata: dict | None = None
        self._metadata_at = float("-inf")
        self._metadata_failed_at = float("-inf")
        self.signing_keys = SigningKeys(
            self._jwks, max_age=max_age, refetch_interval=refetch_interval, backoff=FAILURE_BACKOFF
        )
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

    def _unlisted(self, name: str) -> None:
        setting = ENDPOINT_SETTINGS[name]
        if name in self._required:
            raise EndpointNotConfigured(name, setting)
        if name not in self._unlisted_warned:  # once per process, not on every logout
            self._unlisted_warned.add(name)
            log.warning("the identity provider lists no %s and %s is not set; doing without it", name, setting)

    def _metadata_fresh(self) -> bool:
        return self._metadata is not None and time.monotonic() - self._metadata_at < self._discovery_ttl

    def _jwks(self) -> dict:
        """The provider's JWKS document, from the `jwks_uri` discovery names."""
        return self._get_json(self.metadata()["jwks_uri"], "jwks")

    def _get_json(self, url: str, endpoint: str) -> dict:
        try:
            with provider_call(endpoint):
                response = sent_again_if_dropped(lambda: self._http.get(url, timeout=self._timeout))
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
                response = sent_again_if_dropped(lambda: self._http.get(url, timeout=self._timeout))
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
