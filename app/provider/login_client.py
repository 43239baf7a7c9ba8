"""The public login client's side of OpenID Connect (the authorization request is app.provider.authorization):
code exchange and refresh without a client secret, revocation, end-session URLs and ID-token checks."""

import logging
import math
import secrets
import time
from urllib.parse import urlencode

import requests
from authlib.integrations.base_client import OAuthError
from authlib.integrations.requests_client import OAuth2Session

from ..errors import LoginFailed, ProviderUnavailable
from ..metrics import provider_call
from .client import PublicClient
from .discovery import Provider
from .signatures import BadToken, audiences_of, is_number, signed_claims
from .token_answers import RefreshRejected, Refused, malformed_exchange, refusal_or_outage
from .vendors import PROFILES, ProviderProfile

log = logging.getLogger(__name__)

EXCHANGE_REFUSED = "the sign-in could not be completed; please sign in again"
# RFC 8707: a resource indicator goes on the token request as well as on the authorization request.
TOKEN_REQUEST_PARAMS = ("resource",)


class LoginClient:
    """Speaks to the provider's endpoints, all taken from discovery."""

    def __init__(
        self, provider: Provider, client: PublicClient, *, leeway: int, profile: ProviderProfile = PROFILES["generic"]
    ):
        self.provider = provider
        self.client_id = client.client_id
        self.profile = profile
        self._timeout = client.timeout
        self._leeway = leeway
        self._token_params = {k: v for k, v in client.auth_params.items() if k in TOKEN_REQUEST_PARAMS}

    def discover(self) -> None:
        """Fetch the provider's discovery document now if it is stale; ProviderUnavailable if it fails."""
        self.provider.metadata()

    def exchange(self, *, code: str, verifier: str, redirect_uri: str) -> dict:
        """The token response for an authorization code; LoginFailed when the provider refuses it."""
        session = self._session()
        session.register_compliance_hook("access_token_response", malformed_exchange)
        try:
            with provider_call("token"):
                return session.fetch_token(
                    self._endpoint("token_endpoint"),
                    grant_type="authorization_code",
                    code=code,
                    redirect_uri=redirect_uri,
                    code_verifier=verifier,
                    **self._token_params,
                )
        except OAuthError as error:
            log.info("code exchange refused: %s", error.error)
            raise LoginFailed(EXCHANGE_REFUSED, reason="code_refused") from None
        except (requests.RequestException, ValueError) as error:
            raise ProviderUnavailable(f"token endpoint: {type(error).__name__}") from None

    def refresh(self, refresh_token: str) -> dict:
        """A fresh token response; RefreshRejected when the provider refuses the refresh token (400 or
        401, whatever the body), ProviderUnavailable on a network failure, a timeout or a 5xx."""
        session = self._session()
        session.register_compliance_hook("refresh_token_response", refusal_or_outage)
        try:
            with provider_call("token", refresh=True):
                return session.refresh_token(
                    self._endpoint("token_endpoint"), refresh_token=refresh_token, **self._token_params
                )
        except Refused as refused:
            raise RefreshRejected(refused.code) from None
        except OAuthError as error:
            if error.error == "invalid_grant":
                raise RefreshRejected(error.error) from None
            raise ProviderUnavailable(f"refresh refused: {error.error}") from None
        except (requests.RequestException, ValueError) as error:
            raise ProviderUnavailable(f"token endpoint: {type(error).__name__}") from None

    def revoke(self, refresh_token: str) -> None:
        """Revoke a refresh token when the provider's documents or OIDC_REVOCATION_ENDPOINT name a
        revocation endpoint; failures are only logged."""
        try:
            url = self.provider.endpoint("revocation_endpoint")
            if url:
                with provider_call("revocation"):
                    self._session().revoke_token(
                        url, token=refresh_token, token_type_hint="refresh_token"
                    ).raise_for_status()
        except (ProviderUnavailable, requests.RequestException) as error:
            log.warning("refresh token revocation failed: %s", type(error).__name__)

    def end_session_url(self, *, id_token: str | None, post_logout_redirect_uri: str) -> str:
        """The provider's logout URL, or the post-logout URI when it has no end-session endpoint."""
        try:
            endpoint = self.provider.endpoint("end_session_endpoint")
        except ProviderUnavailable:
            endpoint = None
        if not endpoint:
            return post_logout_redirect_uri
        query = {
            "client_id": self.client_id,
            "post_logout_redirect_uri": post_logout_redirect_uri,
            # Optional in RP-Initiated Logout, yet some providers stay on their own page without it.
            "state": secrets.token_urlsafe(16),
        }
        if self.profile.logout_uri_param:
            query["logout_uri"] = post_logout_redirect_uri  # Cognito's name for it
        if id_token:
            query["id_token_hint"] = id_token
        return f"{endpoint}?{urlencode(query)}"

    def verify_id_token(self, id_token, *, nonce: str | None, max_age: int | None = None) -> dict:
        """The claims of a valid ID token for this client (and `nonce`, when one was sent); with
        `max_age`, its auth_time no older than that plus the leeway (OpenID Connect Core 3.1.2.1)."""
        if not isinstance(id_token, str):
            raise LoginFailed("the identity provider sent no ID token", status=502, reason="no_id_token")
        try:
            _, claims = signed_claims(self.provider, id_token)
        except BadToken as error:
            raise LoginFailed(f"the ID token was refused: {error}", status=502, reason="id_token_refused") from None
        problem = self._id_token_problem(claims, nonce)
        if problem:
            raise LoginFailed(f"the ID token was refused: {problem}", status=502, reason="id_token_refused")
        if max_age is not None and not self._authenticated_within(claims, max_age):
            raise LoginFailed(
                f"the identity provider did not sign you in within the last {max_age} s, as this sign-in asked;"
                " please sign in again",
                status=502,
                reason="stale_auth_time",
                sub=claims["sub"],
            )
        return claims

    def _authenticated_within(self, claims: dict, max_age: int) -> bool:
        auth_time = claims.get("auth_time")
        if not is_number(auth_time) or not math.isfinite(auth_time):
            return False
        age = time.time() - auth_time
        return -self._leeway <= age <= max_age + self._leeway

    def _id_token_problem(self, claims: dict, nonce: str | None) -> str | None:
        now = time.time()
        audiences = audiences_of(claims)
        if claims.get("iss") != self.provider.issuer:
            return "wrong issuer"
        if self.client_id not in audiences:
            return "not issued to this client"
        if (len(audiences) > 1 or "azp" in claims) and claims.get("azp") != self.client_id:
            return "wrong authorized party"
        if not isinstance(claims.get("sub"), str) or not claims["sub"]:
            return "no subject"
        if not is_number(claims.get("exp")) or now >= claims["exp"] + self._leeway:
            return "expired"
        if not is_number(claims.get("iat")) or claims["iat"] > now + self._leeway:
            return "missing or future iat"
        if nonce is not None and claims.get("nonce") != nonce:
            return "nonce mismatch"
        return None

    def _endpoint(self, name: str) -> str:
        url = self.provider.endpoint(name)
        if not url:
            raise ProviderUnavailable(f"discovery lists no {name}")
        return url

    def _session(self) -> OAuth2Session:
        # One per call: OAuth2Session keeps the last token on itself and is not thread-safe.
        return OAuth2Session(
            client_id=self.client_id,
            token_endpoint_auth_method="none",
            revocation_endpoint_auth_method="none",
            default_timeout=self._timeout,
        )
