"""Who the service is at the identity provider: one public login client, the same for every call."""

from dataclasses import dataclass, field


@dataclass(frozen=True)
class PublicClient:
    """A login client without a secret (PKCE proves it): its id, the scopes a sign-in asks for, how long
    a provider call may take, and OIDC_AUTH_PARAMS."""

    client_id: str
    scopes: str
    timeout: float
    auth_params: dict = field(default_factory=dict)
