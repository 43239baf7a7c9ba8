"""What both peers share: settings from the environment, the service's Redis key layout, and the JWT
check (PyJWT with its cached JWKS client, read from the provider's discovery document)."""

import json
import urllib.request
from dataclasses import dataclass

import jwt

COOLDOWN_SECONDS = 24 * 60 * 60
PUBLIC_FIELDS = ("username", "handle", "display_name", "aggregate_scores", "disabled")


class Refused(Exception):
    """A request the peer answers with `status` and the JSON `body`."""

    def __init__(self, status: int, body: dict):
        super().__init__(status)
        self.status, self.body = status, body


@dataclass(frozen=True)
class Settings:
    redis_url: str
    issuer: str
    audience: str
    prefix: str
    profile_scope: str
    poke_scope: str

    @classmethod
    def from_env(cls, env) -> "Settings":
        """The same variables the service reads, with the service's defaults."""
        return cls(
            redis_url=env["REDIS_URL"],
            issuer=env["OIDC_ISSUER_URL"],
            audience=env.get("API_AUDIENCE") or "profile-poke-api",
            prefix=env.get("REDIS_KEY_PREFIX", "pp:"),
            profile_scope=env.get("PROFILE_SCOPE") or "svc:profile.private",
            poke_scope=env.get("POKE_SCOPE") or "svc:interact.poke",
        )

    def user_key(self, username: str) -> str:
        return f"{self.prefix}user:{{{username}}}"

    def subject_key(self, sub: str) -> str:
        return f"{self.prefix}sub:{sub}"

    def cooldown_key(self, poker: str, target: str) -> str:
        return f"{self.prefix}cooldown:{{{target}}}:{poker}"


class TokenChecker:
    """Verifies bearer tokens against the issuer's keys (PyJWKClient caches them)."""

    def __init__(self, settings: Settings):
        discovery = f"{settings.issuer}/.well-known/openid-configuration"
        with urllib.request.urlopen(discovery, timeout=10) as answer:
            jwks_uri = json.load(answer)["jwks_uri"]
        self._keys = jwt.PyJWKClient(jwks_uri, cache_keys=True, lifespan=300)
        self._settings = settings

    def subject(self, authorization: str | None, scope: str) -> str:
        """The `sub` of a valid bearer token carrying `scope`; Refused (401/403) otherwise."""
        scheme, _, token = (authorization or "").partition(" ")
        if scheme.lower() != "bearer" or not token:
            raise Refused(401, {"error": {"code": "unauthorized", "message": "authentication required"}})
        try:
            key = self._keys.get_signing_key_from_jwt(token)
            claims = jwt.decode(
                token,
                key.key,
                algorithms=["RS256", "PS256", "ES256"],
                audience=self._settings.audience,
                issuer=self._settings.issuer,
                leeway=60,
            )
        except jwt.PyJWTError:
            raise Refused(401, {"error": {"code": "invalid_token", "message": "invalid token"}}) from None
        if scope not in str(claims.get("scope", "")).split():
            raise Refused(403, {"error": {"code": "insufficient_scope", "message": f"scope {scope} required"}})
        return claims["sub"]


def public_body(values: list) -> dict | None:
    """The public profile from an HMGET of PUBLIC_FIELDS, or None when it is missing or disabled."""
    if values[0] is None or values[4] == b"1":
        return None
    username, handle, display_name, scores = (value.decode() if value else "" for value in values[:4])
    return {
        "username": username,
        "handle": handle or username,
        "display_name": display_name or username,
        "aggregate_scores": json.loads(scores or "{}"),
    }


def own_body(raw: dict) -> dict:
    """The own profile envelope from an HGETALL; Refused (403) when there is none or it is disabled."""
    fields = {key.decode(): value.decode() for key, value in raw.items()}
    if not fields or fields.get("disabled") == "1":
        raise Refused(403, {"error": {"code": "forbidden", "message": "the account is disabled"}})
    return {
        "data": {
            "handle": fields.get("handle") or fields["username"],
            "display_name": fields.get("display_name") or fields["username"],
            "stats": json.loads(fields.get("stats") or "{}"),
            "aggregate_scores": json.loads(fields.get("aggregate_scores") or "{}"),
        }
    }


def poke_target(body) -> str:
    """The lowercased username a poke body names; Refused (400) when there is none."""
    if not isinstance(body, dict) or not isinstance(body.get("username"), str) or not body["username"]:
        raise Refused(400, {"success": False, "error": "username is required"})
    return body["username"].lower()


def cooldown_refusal(seconds_left: int) -> Refused:
    """The 400 of a poke on cooldown, its remaining time written as the contract says."""
    seconds_left = max(1, seconds_left)
    hours, rest = divmod(seconds_left, 3600)
    minutes, seconds = divmod(rest, 60)
    message = f"poke on cooldown ({hours}h{minutes}m{seconds}s remaining)"
    return Refused(400, {"success": False, "error": message})
