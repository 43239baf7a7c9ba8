"""Development helpers: the dev identity provider's Python driver (oidc_driver) and token CLI (token)."""
