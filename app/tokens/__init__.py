"""What a bearer token proves: access tokens checked locally (JWT) or by introspection (RFC 7662),
DPoP proofs (RFC 9449), and the claims turned into a Principal."""

from .access import AccessTokens
from .introspection import IntrospectedTokens
from .principal import Principal, SignedInIdentity, signed_in_identity

__all__ = ["AccessTokens", "IntrospectedTokens", "Principal", "SignedInIdentity", "signed_in_identity"]
