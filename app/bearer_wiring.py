"""The factory's builders for bearer calls: how access tokens are validated (locally as JWTs, or by
introspection with answers shared by every instance and fair bounds), and the API's guard (DPoP, step-up)."""

from config import Config

from .api.guard import Guard
from .api.step_up import StepUpPolicy
from .provider import Provider, ProviderProfile
from .sessions.credentials import SessionTokens
from .store import Store
from .store.token_checks import ProviderBackoff, TokenChecks
from .tokens import AccessTokens, IntrospectedTokens
from .tokens.answers import Answers
from .tokens.dpop import DpopProofs
from .tokens.dpop_nonces import DpopNonces


def build_access_tokens(
    config: Config, provider: Provider, profile: ProviderProfile, store: Store
) -> AccessTokens | IntrospectedTokens:
    """Local JWT validation, or RFC 7662 introspection when ACCESS_TOKEN_VALIDATION says so."""
    if config.ACCESS_TOKEN_VALIDATION == "introspection":
        checks = TokenChecks(
            store.redis,
            store.keys,
            per_client=config.RATE_LIMIT_INTROSPECTION,
            per_network=config.RATE_LIMIT_INTROSPECTION_NETWORK,
            total=config.RATE_LIMIT_INTROSPECTION_TOTAL,
        )
        return IntrospectedTokens(
            provider,
            client_id=config.INTROSPECTION_CLIENT_ID,
            client_secret=config.INTROSPECTION_CLIENT_SECRET,
            audience=config.API_AUDIENCE,
            login_clients=config.LOGIN_CLIENT_IDS,
            profile=profile,
            cache_ttl=config.INTROSPECTION_CACHE_TTL,
            timeout=config.IDP_TIMEOUT,
            refusal_ttl=config.INTROSPECTION_REFUSAL_TTL,
            answers=Answers(store.introspections),
            backoff=ProviderBackoff(store.redis, store.keys),
            admit=checks.admit,
        )
    return AccessTokens(
        provider,
        audience=config.API_AUDIENCE,
        login_clients=config.LOGIN_CLIENT_IDS,
        leeway=config.TOKEN_LEEWAY,
        profile=profile,
        api_clients=config.API_CLIENT_IDS,
    )


def build_guard(config: Config, store: Store, access_tokens, session_tokens: SessionTokens) -> Guard:
    """Who may call the API, in the contract's order, with DPoP proofs and step-up as configured."""
    proofs = None
    if config.DPOP:
        nonces = DpopNonces(config.SECRET_KEY) if config.DPOP_NONCE else None
        proofs = DpopProofs(store.seen_proofs, leeway=config.TOKEN_LEEWAY, origins=config.PUBLIC_ORIGINS, nonces=nonces)
    return Guard(
        access_tokens,
        session_tokens,
        store.profiles,
        session_cookie=config.SESSION_COOKIE_NAME,
        proofs=proofs,
        step_up=StepUpPolicy(config.STEP_UP_ACR, config.STEP_UP_MAX_AGE),
    )
