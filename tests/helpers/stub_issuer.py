"""A small controllable OpenID issuer for fast tests: real HTTP discovery and JWKS on loopback,
keys the test holds, and counters of what was fetched. Tokens are signed locally."""

import base64
import hashlib
import hmac
import json
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qsl, urlsplit

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding
from cryptography.hazmat.primitives.asymmetric.rsa import RSAPrivateKey
from joserfc import jwt
from joserfc.jwk import ECKey, RSAKey

Key = RSAKey | ECKey


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


# Keys made by this process, handed out again from the first by the next test session. Each of
# mutmut's mutants runs a session of its own in a process forked from one that already made them:
# making them again (~0.1 s each, for every module's fixtures) took 7 % of a sampled stretch of a run.
_rsa_keys: list[RSAPrivateKey] = []
_rsa_keys_given = 0


def _unused_rsa_key() -> RSAPrivateKey:
    """The private key of an RSA key pair this session has not been given yet."""
    global _rsa_keys_given
    if _rsa_keys_given == len(_rsa_keys):
        _rsa_keys.append(RSAKey.generate_key(2048).private_key)
    _rsa_keys_given += 1
    return _rsa_keys[_rsa_keys_given - 1]


def give_keys_again() -> None:
    """Start a new test session: the keys made so far may be given out once more."""
    global _rsa_keys_given
    _rsa_keys_given = 0


class StubIssuer:
    """Serves `{issuer}/.well-known/openid-configuration` and the JWKS of `published` keys."""

    def __init__(self, key: RSAKey | None = None):
        self.key = key or self.new_key("stub-key-1")
        self.published = [self.key]
        self.fetches = Counter()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.port = self._server.server_address[1]
        self.issuer = f"http://127.0.0.1:{self.port}/realms/stub"
        # A short poll interval: stop() waits for one, and tests may start a stub each.
        threading.Thread(target=self._server.serve_forever, args=(0.01,), daemon=True).start()

    @staticmethod
    def new_key(kid: str | None) -> RSAKey:
        """A 2048-bit RSA key no other call of this test session returned."""
        parameters = {"use": "sig", "alg": "RS256", **({"kid": kid} if kid else {})}
        # From the key object: importing the JWK's members checks the key pair again (about 40 ms).
        return RSAKey.import_key(_unused_rsa_key(), parameters)

    @staticmethod
    def new_ec_key(kid: str | None) -> ECKey:
        """A P-256 key: small enough to embed in a JWS header (joserfc refuses headers over 512 bytes)."""
        return ECKey.generate_key("P-256", parameters={"use": "sig", "alg": "ES256", **({"kid": kid} if kid else {})})

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def access_claims(self, **overrides) -> dict:
        now = int(time.time())
        claims = {
            "iss": self.issuer,
            "sub": "user-sub-1",
            "aud": "profile-poke-api",
            "client_id": "profile-poke-web",
            "scope": "svc:profile.private svc:interact.poke",
            "iat": now,
            "exp": now + 300,
            "jti": "j1",
            "preferred_username": "alice",
            "name": "Alice Liddell",
        }
        claims.update(overrides)
        return {name: value for name, value in claims.items() if value is not None}

    def sign(self, claims: dict, *, key: Key | None = None, header: dict | None = None) -> str:
        """A JWT of `claims`: RS256 by the stub's key unless `key` or `header` say otherwise."""
        key = key or self.key
        head = {"alg": "RS256", "typ": "at+jwt", **({"kid": key.kid} if key.kid else {}), **(header or {})}
        return jwt.encode({k: v for k, v in head.items() if v is not None}, claims, key, algorithms=[head["alg"]])

    def sign_raw(self, claims: dict, header: dict) -> str:
        """RS256 over any header, even one a JOSE library would refuse to produce (an unknown `crit`)."""
        return self.sign_raw_payload(header, json.dumps(claims))

    def sign_raw_payload(self, header: dict, payload: str) -> str:
        """RS256 over any header and any payload text, JSON object or not."""
        signing_input = f"{b64url(json.dumps(header).encode())}.{b64url(payload.encode())}"
        signature = self.key.private_key.sign(signing_input.encode(), padding.PKCS1v15(), hashes.SHA256())
        return f"{signing_input}.{b64url(signature)}"

    def unsigned(self, claims: dict, header: dict) -> str:
        """A token with any header and an empty or HMAC signature, as an attacker would make."""
        signing_input = f"{b64url(json.dumps(header).encode())}.{b64url(json.dumps(claims).encode())}"
        if header.get("alg") == "HS256":
            secret = self.key.as_pem(private=False)
            signature = b64url(hmac.new(secret, signing_input.encode(), hashlib.sha256).digest())
        else:
            signature = ""
        return f"{signing_input}.{signature}"

    def discovery(self) -> dict:
        """The discovery document."""
        return {
            "issuer": self.issuer,
            "jwks_uri": f"{self.issuer}/certs",
            "authorization_endpoint": f"{self.issuer}/auth",
            "token_endpoint": f"{self.issuer}/token",
        }

    def answer(self, method: str, path: str, params: dict, headers) -> tuple[int, dict, dict | None]:
        """Status, headers and JSON body for a request whose query or form fields are `params`."""
        if method == "GET" and path.endswith("/.well-known/openid-configuration"):
            self.fetches["discovery"] += 1
            return 200, {}, self.discovery()
        if method == "GET" and path.endswith("/certs"):
            self.fetches["jwks"] += 1
            return 200, {}, {"keys": [key.as_dict(private=False) for key in self.published]}
        self.fetches["other"] += 1
        return 404, {}, {"error": "not_found"}

    def _handler(self):
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                url = urlsplit(self.path)
                self._reply(*stub.answer("GET", url.path, dict(parse_qsl(url.query)), self.headers))

            def do_POST(self):
                form = self.rfile.read(int(self.headers.get("Content-Length", 0))).decode()
                self._reply(*stub.answer("POST", urlsplit(self.path).path, dict(parse_qsl(form)), self.headers))

            def _reply(self, status: int, headers: dict, body: dict | None):
                data = b"" if body is None else json.dumps(body).encode()
                self.send_response(status)
                for name, value in {"Content-Type": "application/json", **headers}.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        return Handler
