"""Bearer-token validation: discovery, the JWKS cache, and claims turned into a Principal."""

from .access import AccessTokens
from .principal import Principal
from .provider import Provider, ProviderUnavailable

__all__ = ["AccessTokens", "Principal", "Provider", "ProviderUnavailable"]
