"""A controllable OpenID provider for sign-in tests: the stub issuer plus an authorization endpoint that
answers at once (no login page), a token endpoint that checks the code, redirect URI and PKCE, and a
revocation endpoint that records what it is sent."""

import hashlib
import secrets
import time
from urllib.parse import urlencode

from joserfc.jwk import RSAKey

from tests.helpers.stub_issuer import StubIssuer, b64url

SCOPE = "openid svc:profile.private svc:interact.poke"
AUTHORIZATION_FIELDS = ("client_id", "redirect_uri", "state", "nonce", "code_challenge", "code_challenge_method")


class StubOP(StubIssuer):
    """Discovery, JWKS, authorization and token endpoints; tests steer it through plain attributes."""

    def __init__(self, key: RSAKey | None = None):
        super().__init__(key)
        self.authorizations: list[dict] = []  # the recorded authorization requests
        self.token_requests: list[dict] = []  # token request forms, with the Authorization header as `authorization`
        self.token_endpoint = f"{self.issuer}/token"
        self.token_failure: tuple[int, dict | None] | None = None  # status and body (None: empty) of every answer
        self.token_delay = 0.0  # seconds the token endpoint waits before answering
        self.token_status = 200  # the status of an answer to a good code exchange (its tokens as ever)
        self.expires_in = 300  # lifetime of the access tokens it issues, as the token response says
        self.id_token = self.sign_id  # default claims -> the ID token, or None to leave it out
        self.token_changes: dict = {}  # fields to change in every token response (None leaves one out)
        self.revocations: list[dict] = []  # the recorded revocation request forms
        self.revocation_status = 200  # what the revocation endpoint answers (with an empty body)
        self._grants: dict[str, dict] = {}

    def discovery(self) -> dict:
        """The discovery document, with the end-session endpoint and the token endpoint a test may move."""
        logout, revoke = f"{self.issuer}/logout", f"{self.issuer}/revoke"
        return {
            **super().discovery(),
            "token_endpoint": self.token_endpoint,
            "end_session_endpoint": logout,
            "revocation_endpoint": revoke,
        }

    def answer(self, method: str, path: str, params: dict, headers) -> tuple[int, dict, dict | None]:
        """The authorization, token and revocation endpoints; everything else as the stub issuer."""
        if method == "GET" and path.endswith("/auth"):
            self.fetches["authorization"] += 1
            return self._authorize(params)
        if method == "POST" and path.endswith("/token"):
            self.fetches["token"] += 1
            return self._token(params, headers)
        if method == "POST" and path.endswith("/revoke"):
            self.revocations.append(params)
            return self.revocation_status, {}, None
        return super().answer(method, path, params, headers)

    def sign_id(self, claims: dict, *, key: RSAKey | None = None, header: dict | None = None) -> str:
        """An ID token of `claims` (None values left out): RS256 with the key's kid unless `header` changes it."""
        kept = {name: value for name, value in claims.items() if value is not None}
        return self.sign(kept, key=key, header={"typ": "JWT", **(header or {})})

    def _authorize(self, params: dict) -> tuple[int, dict, None]:
        grant = {name: params.get(name) for name in AUTHORIZATION_FIELDS}
        self.authorizations.append({**params, **grant})
        code = secrets.token_urlsafe(16)
        self._grants[code] = grant
        query = urlencode({"code": code, "state": grant["state"], "iss": self.issuer})
        return 302, {"Location": f"{grant['redirect_uri']}?{query}"}, None

    def _token(self, form: dict, headers) -> tuple[int, dict, dict]:
        self.token_requests.append({**form, "authorization": headers.get("Authorization")})
        time.sleep(self.token_delay)
        if self.token_failure:
            return self.token_failure[0], {}, self.token_failure[1]
        grant = self._grants.pop(form.get("code"), None)
        challenge = b64url(hashlib.sha256(form.get("code_verifier", "").encode()).digest())
        if (
            grant is None
            or form.get("grant_type") != "authorization_code"
            or form.get("client_id") != grant["client_id"]
            or form.get("redirect_uri") != grant["redirect_uri"]
            or challenge != grant["code_challenge"]
        ):
            return 400, {}, {"error": "invalid_grant"}
        return self.token_status, {"Cache-Control": "no-store"}, self._token_response(grant)

    def _token_response(self, grant: dict) -> dict:
        now = int(time.time())
        claims = {
            "iss": self.issuer,
            "sub": "user-sub-1",
            "aud": grant["client_id"],
            "exp": now + 300,
            "iat": now,
            "nonce": grant["nonce"],
            "preferred_username": "alice",
            "name": "Alice Liddell",
        }
        access_token = self.sign(self.access_claims(client_id=grant["client_id"], jti=secrets.token_hex(8)))
        response = {
            "access_token": access_token,
            "token_type": "Bearer",
            "expires_in": self.expires_in,
            "refresh_token": secrets.token_urlsafe(32),
            "scope": SCOPE,
        }
        id_token = self.id_token(claims)
        response = {**response, "id_token": id_token, **self.token_changes}
        return {name: value for name, value in response.items() if value is not None}
