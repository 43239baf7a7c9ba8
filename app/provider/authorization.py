"""The authorization request that starts a browser sign-in: code flow with PKCE S256, sent through the
browser (front channel) or pushed to the provider first (RFC 9126, OIDC_PAR)."""

import base64
import hashlib
import logging
from urllib.parse import urlencode

import requests
from authlib.integrations.base_client import OAuthError

from ..errors import LoginFailed, ProviderUnavailable
from ..metrics import provider_call
from .client import PublicClient
from .discovery import Provider

log = logging.getLogger(__name__)

PAR_MODES = ("auto", "require", "off")
PAR_ENDPOINT = "pushed_authorization_request_endpoint"
SIGN_IN_UNAVAILABLE = "sign-in unavailable: the identity provider did not accept the sign-in request"
MAX_REQUEST_URI = 2048
FLOW_PARAMS = {
    "client_id",
    "response_type",
    "redirect_uri",
    "scope",
    "state",
    "nonce",
    "code_challenge",
    "code_challenge_method",
    "code_verifier",
    "request_uri",
    "request",
}


class _ParRefused(OAuthError):
    """A 4xx from the PAR endpoint (an OAuthError, so metrics say refused)."""


class _ParFailed(Exception):
    """The PAR endpoint answered, but neither a usable 201 nor a refusal."""


def extra_auth_params(auth_params: dict | None) -> dict:
    """OIDC_AUTH_PARAMS without the parameters the sign-in flow sets itself (those always win)."""
    ignored = sorted(set(auth_params or {}) & FLOW_PARAMS)
    if ignored:
        log.warning("OIDC_AUTH_PARAMS: %s ignored, the sign-in flow sets them itself", ", ".join(ignored))
    return {k: v for k, v in (auth_params or {}).items() if k not in FLOW_PARAMS}


def code_challenge(verifier: str) -> str:
    """RFC 7636 S256: the base64url SHA-256 of the verifier, without padding."""
    return base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()


class AuthorizationRequests:
    """Builds the provider URL a browser is sent to, pushing the parameters first when OIDC_PAR says so."""

    def __init__(self, provider: Provider, client: PublicClient, *, par: str = "auto"):
        if par not in PAR_MODES:
            raise ValueError(f"OIDC_PAR must be one of {', '.join(PAR_MODES)}")
        self._provider = provider
        self._client_id = client.client_id
        self._scopes = client.scopes
        self._timeout = client.timeout
        self._par = par
        self._extra = extra_auth_params(client.auth_params)

    def requested(self, params: dict | None) -> dict:
        """The parameters a sign-in sends beside the flow's own: OIDC_AUTH_PARAMS, then `params` over them."""
        return {**self._extra, **{k: v for k, v in (params or {}).items() if k not in FLOW_PARAMS}}

    def url(self, *, redirect_uri: str, state: str, nonce: str, verifier: str, params: dict | None = None) -> str:
        """Where to send the browser; `params` (per sign-in) win over OIDC_AUTH_PARAMS. A PAR failure
        is LoginFailed (502), never a fallback to the front channel."""
        query = {
            "client_id": self._client_id,
            "response_type": "code",
            "redirect_uri": redirect_uri,
            "scope": self._scopes,
            "state": state,
            "nonce": nonce,
            "code_challenge": code_challenge(verifier),
            "code_challenge_method": "S256",
            **self.requested(params),  # never one of the flow's own (FLOW_PARAMS)
        }
        self._check_prompt_supported(query.get("prompt"))
        authorize = self._provider.endpoint("authorization_endpoint")
        if not authorize:
            raise ProviderUnavailable("discovery lists no authorization_endpoint")
        par_endpoint = self._par_endpoint()
        if par_endpoint:
            query = {"client_id": self._client_id, "request_uri": self._push(par_endpoint, query)}
        return f"{authorize}{'&' if '?' in authorize else '?'}{urlencode(query)}"

    def _check_prompt_supported(self, prompt) -> None:
        """A 400 naming `prompt` when discovery lists the prompt values the provider supports and one of
        the requested ones is not among them (the provider would refuse it, through PAR as a 502)."""
        supported = self._provider.metadata().get("prompt_values_supported")
        if not prompt or not isinstance(supported, list):
            return
        unsupported = [value for value in prompt.split() if value not in supported]
        if unsupported:
            raise LoginFailed(
                f"invalid_request: the sign-in parameter prompt asks for {' '.join(unsupported)}, which the"
                " identity provider does not support",
                code="invalid_request",
                reason="bad_request",
            )

    def _par_endpoint(self) -> str | None:
        if self._par == "off":
            return None
        endpoint = self._provider.metadata().get(PAR_ENDPOINT)
        if isinstance(endpoint, str) and endpoint:
            return endpoint
        if self._par == "require":
            raise LoginFailed(
                "sign-in unavailable: OIDC_PAR=require, but the identity provider offers no pushed"
                " authorization requests",
                status=502,
                reason="par_failed",
            )
        return None

    def _push(self, endpoint: str, params: dict) -> str:
        """RFC 9126: post the parameters as a public client (client_id, no secret); the request_uri."""
        try:
            with provider_call("par"):
                response = requests.post(endpoint, data=params, timeout=self._timeout, allow_redirects=False)
                return _request_uri(response)
        except (requests.RequestException, _ParRefused, _ParFailed) as error:
            log.warning("pushed authorization request failed: %s", _why(error))
            raise LoginFailed(SIGN_IN_UNAVAILABLE, status=502, reason="par_failed") from None


def _request_uri(response: requests.Response) -> str:
    """The request_uri of a 201 answer; _ParRefused for a 4xx, _ParFailed for anything else."""
    if 400 <= response.status_code < 500:
        raise _ParRefused(error=f"http_{response.status_code}")
    if response.status_code != 201:
        raise _ParFailed(f"answered {response.status_code}")
    try:
        body = response.json()
    except ValueError:
        raise _ParFailed("a 201 without JSON") from None
    uri = body.get("request_uri") if isinstance(body, dict) else None
    if not isinstance(uri, str) or not uri or len(uri) > MAX_REQUEST_URI:
        raise _ParFailed("a 201 without a request_uri")
    return uri


def _why(error: Exception) -> str:
    # Never the body: the reason code, the status or the exception class only.
    if isinstance(error, _ParRefused):
        return f"refused ({error.error})"
    return str(error) if isinstance(error, _ParFailed) else type(error).__name__
