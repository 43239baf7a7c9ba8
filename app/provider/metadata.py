"""The provider's RFC 8414 authorization-server metadata: where it may be served, which copy counts
(its `issuer` exactly ours, RFC 8414 3.3), cached like discovery and retried no faster than it."""

import logging
import threading
import time
from collections.abc import Callable
from urllib.parse import urlsplit, urlunsplit

from ..errors import ProviderUnavailable

WELL_KNOWN = "/.well-known/oauth-authorization-server"
# The members read from it when discovery lacks them; every other member comes from discovery only.
SERVER_METADATA_MEMBERS = {
    "introspection_endpoint",
    "introspection_endpoint_auth_methods_supported",
    "revocation_endpoint",
    "revocation_endpoint_auth_methods_supported",
}

log = logging.getLogger(__name__)


def server_metadata_urls(issuer: str) -> list[str]:
    """Where to look, in order: the well-known segment between host and path (RFC 8414 3.1), then
    appended to the issuer, as some vendors serve it (Okta's custom authorization servers)."""
    parts = urlsplit(issuer)
    inserted = urlunsplit((parts.scheme, parts.netloc, WELL_KNOWN + parts.path.rstrip("/"), "", ""))
    appended = issuer.rstrip("/") + WELL_KNOWN
    return [inserted] if appended == inserted else [inserted, appended]


class ServerMetadata:
    """The first RFC 8414 document for `issuer` that names it exactly, or {} when the provider serves
    none; fetched on first need, kept `ttl` seconds, re-tried after a failure no sooner than `backoff`."""

    def __init__(self, issuer: str, get: Callable[[str, str], dict | None], *, ttl: float, backoff: float):
        self._issuer = issuer
        self._get = get  # (url, endpoint label) -> the JSON object, None when none is served there
        self._ttl = ttl
        self._backoff = backoff
        self._lock = threading.Lock()
        self._document: dict | None = None
        self._read_at = float("-inf")
        self._failed_at = float("-inf")

    def document(self) -> dict:
        """The cached document; ProviderUnavailable when the provider could not be asked and no copy exists."""
        if self._fresh():
            return self._document
        with self._lock:
            if self._fresh():
                return self._document  # another thread read it while this one waited
            if time.monotonic() - self._failed_at >= self._backoff:
                try:
                    self._document, self._read_at = self._read(), time.monotonic()
                    return self._document
                except ProviderUnavailable:
                    self._failed_at = time.monotonic()
            if self._document is None:
                raise ProviderUnavailable("the authorization server metadata could not be fetched")
            return self._document

    def _fresh(self) -> bool:
        return self._document is not None and time.monotonic() - self._read_at < self._ttl

    def _read(self) -> dict:
        for url in server_metadata_urls(self._issuer):
            document = self._get(url, "server_metadata")
            if document is None:
                continue
            if document.get("issuer") == self._issuer:
                return document
            # RFC 8414 3.3: metadata naming another issuer must not be used (a mix-up attack).
            log.warning("ignored the authorization server metadata at %s: it names another issuer", url)
        return {}
