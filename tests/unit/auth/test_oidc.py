"""The authorization request the login client builds: exactly the contract's parameters, PKCE S256."""

import base64
import hashlib
from urllib.parse import parse_qsl, urlsplit

from app.auth.oidc import LoginClient
from app.tokens import Provider

SCOPES = "openid svc:profile.private svc:interact.poke"


def test_the_authorization_url_carries_exactly_the_contracts_parameters(stub_issuer):
    provider = Provider(stub_issuer.issuer, timeout=2, discovery_ttl=60, refetch_interval=10)
    client = LoginClient(provider, client_id="profile-poke-web", scopes=SCOPES, timeout=2, leeway=0)
    verifier = "v" * 64
    url = client.authorization_url(
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
