"""The identity provider as the service knows it: its documents and signing keys (discovery, RFC 8414
metadata, JWKS), how each vendor writes its tokens, and the public login client that talks to it."""

from .authorization import AuthorizationRequests
from .client import PublicClient
from .discovery import Provider
from .login_client import LoginClient, RefreshRejected
from .vendors import ProviderProfile, provider_profile

__all__ = [
    "AuthorizationRequests",
    "LoginClient",
    "Provider",
    "ProviderProfile",
    "PublicClient",
    "RefreshRejected",
    "provider_profile",
]
