"""Who an access token belongs to, asked at the provider's userinfo endpoint: for introspection
answers that name no subject (RFC 7662 makes `sub` optional)."""

import requests

from ..challenges import SubjectUnknown
from ..errors import ProviderUnavailable
from ..metrics import provider_call
from .discovery import Provider
from .vendors import ProviderProfile


class UserinfoIdentities:
    """Reads the subject (and username) of an access token from userinfo, as the ID token names them."""

    def __init__(self, provider: Provider, http: requests.Session, *, profile: ProviderProfile, timeout: float):
        self._provider = provider
        self._http = http
        self._profile = profile
        self._timeout = timeout

    def identity(self, token: str) -> tuple[str, str | None]:
        """The subject and username claim userinfo gives for `token`; SubjectUnknown when it gives no
        subject, ProviderUnavailable when it cannot answer (a network failure or a 5xx)."""
        claims = self._claims(token)
        subject = claims.get(self._profile.id_subject_claim)
        if not isinstance(subject, str) or not subject:
            raise SubjectUnknown(f"userinfo names no {self._profile.id_subject_claim}")
        claims_named = (self._profile.id_username_claim, self._profile.username_claim)
        names = (claims.get(claim) for claim in claims_named if claim)
        return subject, next((name for name in names if isinstance(name, str) and name), None)

    def _claims(self, token: str) -> dict:
        url = self._provider.endpoint("userinfo_endpoint")
        if not url:
            raise SubjectUnknown("discovery lists no userinfo_endpoint")
        headers = {"Authorization": f"Bearer {token}", "Accept": "application/json"}
        try:
            with provider_call("userinfo"):
                response = self._http.get(url, headers=headers, timeout=self._timeout)
                if response.status_code >= 500:
                    response.raise_for_status()
        except requests.RequestException as error:
            raise ProviderUnavailable(f"userinfo endpoint: {type(error).__name__}") from None
        if response.status_code != 200:
            raise SubjectUnknown(f"userinfo answered {response.status_code}")
        try:
            claims = response.json()
        except ValueError:
            claims = None
        if not isinstance(claims, dict):
            raise SubjectUnknown("userinfo answered no JSON object")
        return claims
