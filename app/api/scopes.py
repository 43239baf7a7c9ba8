"""The service's own scopes: the only ones the API enforces."""

PROFILE_SCOPE = "svc:profile.private"
POKE_SCOPE = "svc:interact.poke"
