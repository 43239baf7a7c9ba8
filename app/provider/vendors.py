"""How each identity provider writes its tokens, as data: claim names, app-token markers, audience rule.

One table, read by one principal builder (`principal.py`). Every entry follows that vendor's token
reference; docs/providers.md names the documents.
"""

from dataclasses import dataclass, replace

# App-token markers: (test, claim, value). A token matching any marker is never a user's.
#   ("is_client", claim, None)      the claim equals the token's client id
#   ("prefix"|"suffix"|"equals", claim, text)
#   ("missing", claim, None)        the claim is absent
#   ("without", claim, other)       the claim is present and `other` is absent
AUDIENCE_CLAIM = "aud"  # `aud` must contain API_AUDIENCE
CLIENT_ALLOWLIST = "client_id"  # no `aud`: `token_use` is `access` and `client_id` is in API_CLIENT_IDS


@dataclass(frozen=True)
class ProviderProfile:
    subject_claim: str  # access token
    id_subject_claim: str  # ID token
    scope_claim: str
    username_claim: str | None  # access token
    id_username_claim: str | None  # ID token
    client_claims: tuple[str, ...]
    app_markers: tuple[tuple[str, str, str | None], ...]
    audience_rule: str = AUDIENCE_CLAIM
    logout_uri_param: bool = False  # Cognito wants `logout_uri` beside `post_logout_redirect_uri`


_KEYCLOAK = ProviderProfile(
    subject_claim="sub",
    id_subject_claim="sub",
    scope_claim="scope",
    username_claim="preferred_username",
    id_username_claim="preferred_username",
    client_claims=("client_id", "azp"),
    app_markers=(("is_client", "sub", None), ("prefix", "preferred_username", "service-account-")),
)

PROFILES = {
    "generic": _KEYCLOAK,
    "keycloak": _KEYCLOAK,
    "auth0": ProviderProfile(
        subject_claim="sub",
        id_subject_claim="sub",
        scope_claim="scope",
        username_claim=None,
        id_username_claim="nickname",
        client_claims=("client_id", "azp"),
        app_markers=(
            ("is_client", "sub", None),
            ("suffix", "sub", "@clients"),
            ("equals", "gty", "client-credentials"),
        ),
    ),
    "okta": ProviderProfile(
        subject_claim="uid",
        id_subject_claim="sub",
        scope_claim="scp",
        username_claim=None,
        id_username_claim=None,
        client_claims=("cid",),
        app_markers=(("is_client", "sub", None), ("missing", "uid", None)),
    ),
    "entra": ProviderProfile(
        subject_claim="oid",
        id_subject_claim="oid",
        scope_claim="scp",
        username_claim="preferred_username",
        id_username_claim="preferred_username",
        client_claims=("azp", "appid"),
        app_markers=(("equals", "idtyp", "app"), ("without", "roles", "scp")),
    ),
    "cognito": ProviderProfile(
        subject_claim="sub",
        id_subject_claim="sub",
        scope_claim="scope",
        username_claim="username",
        id_username_claim="cognito:username",
        client_claims=("client_id",),
        app_markers=(("is_client", "sub", None),),
        audience_rule=CLIENT_ALLOWLIST,
        logout_uri_param=True,
    ),
}


def provider_profile(name: str, *, subject_claim=None, scope_claim=None, username_claim=None) -> ProviderProfile:
    """The profile called `name`, with any claim name the operator set instead of the profile's."""
    profile = PROFILES[name]
    overrides = {"subject_claim": subject_claim, "scope_claim": scope_claim}
    if username_claim:
        overrides |= {"username_claim": username_claim, "id_username_claim": username_claim}
    return replace(profile, **{field: value for field, value in overrides.items() if value})
