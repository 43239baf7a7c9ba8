"""The authorization request a sign-in starts with: exactly the contract's parameters, PKCE S256."""

import base64
import hashlib
from urllib.parse import parse_qsl, urlsplit

from app.provider import Provider, PublicClient
from app.provider.authorization import AuthorizationRequests

SCOPES = "openid svc:profile.private svc:interact.poke"


def requests_for(stub_issuer, *, auth_params: dict | None = None, **settings) -> AuthorizationRequests:
    provider = Provider(stub_issuer.issuer, timeout=2, discovery_ttl=60, refetch_interval=10)
    client = PublicClient("profile-poke-web", SCOPES, timeout=2, auth_params=auth_params or {})
    return AuthorizationRequests(provider, client, **settings)


def test_without_a_par_endpoint_the_authorization_url_carries_exactly_the_contracts_parameters(stub_issuer):
    verifier = "v" * 64
    url = requests_for(stub_issuer).url(
        redirect_uri="http://127.0.0.1:8000/auth/callback", state="the-state", nonce="the-nonce", verifier=verifier
    )
    assert url.startswith(f"{stub_issuer.issuer}/auth?")
    pairs = parse_qsl(urlsplit(url).query)
    assert len(pairs) == len(dict(pairs))  # no parameter twice
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    assert dict(pairs) == {
        "client_id": "profile-poke-web",
        "response_type": "code",
        "redirect_uri": "http://127.0.0.1:8000/auth/callback",
        "scope": SCOPES,
        "state": "the-state",
        "nonce": "the-nonce",
        "code_challenge": challenge,
        "code_challenge_method": "S256",
    }


def test_a_per_request_parameter_wins_over_oidc_auth_params_and_never_over_the_flows_own(stub_issuer):
    authorization = requests_for(stub_issuer, auth_params={"prompt": "consent", "audience": "api"})
    url = authorization.url(
        redirect_uri="http://127.0.0.1:8000/auth/callback",
        state="the-state",
        nonce="the-nonce",
        verifier="v" * 64,
        params={"prompt": "login", "login_hint": "alice", "state": "forged", "request_uri": "urn:x"},
    )
    query = dict(parse_qsl(urlsplit(url).query))
    assert (query["prompt"], query["login_hint"], query["audience"]) == ("login", "alice", "api")
    assert query["state"] == "the-state"
    assert "request_uri" not in query
