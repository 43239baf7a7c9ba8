"""Bearer-token validation: discovery, the JWKS cache, provider profiles, and claims turned into a Principal."""

from .access import AccessTokens
from .introspection import IntrospectedTokens
from .principal import Principal, SignedInIdentity, signed_in_identity
from .provider import Provider, ProviderUnavailable
from .provider_profiles import ProviderProfile, provider_profile

__all__ = [
    "AccessTokens",
    "IntrospectedTokens",
    "Principal",
    "Provider",
    "ProviderProfile",
    "ProviderUnavailable",
    "SignedInIdentity",
    "provider_profile",
    "signed_in_identity",
]
