"""The factory's builders, one per wing: each turns the settings into that wing's services, handed the
services of the wings below it (store < provider < tokens < sessions < sign-in, API)."""

from flask import Flask

from config import Config, ConfigError

from .api.guard import Guard
from .api.step_up import StepUpPolicy
from .auth.flow import SignIn
from .auth.pending import PendingSignIns
from .extensions import Services
from .metrics import count_unconfirmed_write
from .provider import AuthorizationRequests, LoginClient, Provider, PublicClient, provider_profile
from .provider.vendors import PROFILES as PROVIDER_PROFILES
from .sessions.backchannel import BackchannelLogout
from .sessions.credentials import SessionTokens
from .sessions.interface import BffSessionInterface
from .sessions.per_user import BrowserSessions
from .store import Store
from .store.token_checks import ProviderBackoff, TokenChecks
from .tokens import AccessTokens, IntrospectedTokens
from .tokens.answers import Answers
from .tokens.dpop import DpopNonces, DpopProofs


def build_store(config: Config, redis) -> Store:
    """Every Redis-backed store, under REDIS_KEY_PREFIX."""
    return Store(
        redis,
        config.REDIS_KEY_PREFIX,
        link_unclaimed_profiles=config.LINK_UNCLAIMED_PROFILES,
        dpop_proofs_per_key=config.RATE_LIMIT_DPOP_PROOFS,
        wait_timeout_ms=config.REDIS_WAIT_TIMEOUT_MS,
        on_unconfirmed=count_unconfirmed_write,
    )


def build_provider(config: Config) -> tuple[Provider, LoginClient]:
    """The identity provider from discovery, and the public login client that talks to it."""
    provider = Provider(
        config.OIDC_ISSUER_URL,
        timeout=config.IDP_TIMEOUT,
        discovery_ttl=config.DISCOVERY_TTL,
        refetch_interval=config.JWKS_REFETCH_INTERVAL,
        max_age=config.JWKS_MAX_AGE,
        configured={
            "introspection_endpoint": config.OIDC_INTROSPECTION_ENDPOINT,
            "revocation_endpoint": config.OIDC_REVOCATION_ENDPOINT,
        },
        required=("introspection_endpoint",) if config.ACCESS_TOKEN_VALIDATION == "introspection" else (),
    )
    login_client = LoginClient(provider, public_client(config), leeway=config.TOKEN_LEEWAY, profile=vendor(config))
    return provider, login_client


def public_client(config: Config) -> PublicClient:
    """The service as a login client at the provider, shared by the login client and the sign-in request."""
    return PublicClient(
        config.OIDC_CLIENT_ID, config.OIDC_SCOPES, timeout=config.IDP_TIMEOUT, auth_params=config.OIDC_AUTH_PARAMS
    )


def vendor(config: Config):
    """How this provider writes its tokens: OIDC_PROVIDER_PROFILE with the claim-name overrides;
    ConfigError naming the profiles when it names none of them."""
    if config.OIDC_PROVIDER_PROFILE not in PROVIDER_PROFILES:
        raise ConfigError(f"OIDC_PROVIDER_PROFILE must be one of {', '.join(PROVIDER_PROFILES)}")
    return provider_profile(
        config.OIDC_PROVIDER_PROFILE,
        subject_claim=config.TOKEN_SUBJECT_CLAIM,
        scope_claim=config.TOKEN_SCOPE_CLAIM,
        username_claim=config.TOKEN_USERNAME_CLAIM,
    )


def build_access_tokens(config: Config, provider: Provider, store: Store) -> AccessTokens | IntrospectedTokens:
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
            profile=vendor(config),
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
        profile=vendor(config),
        api_clients=config.API_CLIENT_IDS,
    )


def build_sessions(config: Config, store: Store, provider: Provider, login_client: LoginClient):
    """The browser-session wing: session tokens, your sessions, and back-channel logout."""
    session_tokens = SessionTokens(
        store.token_sets,
        login_client,
        store.session_index,
        secret_key=config.SECRET_KEY,
        secret_key_fallbacks=tuple(config.SECRET_KEY_FALLBACKS),
        idle_timeout=config.SESSION_IDLE_TIMEOUT,
        max_age=config.SESSION_MAX_AGE,
        idp_timeout=config.IDP_TIMEOUT,
    )
    browser_sessions = BrowserSessions(
        session_tokens, store.token_sets, store.session_index, login_client, idle_timeout=config.SESSION_IDLE_TIMEOUT
    )
    backchannel = BackchannelLogout(
        provider, store.session_index, browser_sessions, client_id=config.OIDC_CLIENT_ID, leeway=config.TOKEN_LEEWAY
    )
    return session_tokens, browser_sessions, backchannel


def build_sign_in(
    config: Config, store: Store, provider: Provider, login_client: LoginClient, session_tokens: SessionTokens
) -> SignIn:
    """The browser sign-in: the authorization request (front channel or PAR), callback and exchange."""
    return SignIn(
        login_client,
        AuthorizationRequests(provider, public_client(config), par=config.OIDC_PAR),
        PendingSignIns(
            config.SECRET_KEY,
            config.SECRET_KEY_FALLBACKS,
            cookie_prefix=config.LOGIN_COOKIE_NAME,
            ttl_seconds=config.LOGIN_STATE_TTL,
        ),
        store.used_states,
        store.profiles,
        session_tokens,
        redirect_uri=config.OIDC_REDIRECT_URI,
        scopes=config.OIDC_SCOPES,
        exchange_redirect_uris=config.EXCHANGE_REDIRECT_URIS,
        post_logout_redirect_uri=config.OIDC_POST_LOGOUT_REDIRECT_URI,
        session_cookie=config.SESSION_COOKIE_NAME,
        idle_timeout=config.SESSION_IDLE_TIMEOUT,
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


def build_services(config: Config, redis) -> Services:
    """Every wing, built bottom up."""
    store = build_store(config, redis)
    provider, login_client = build_provider(config)
    access_tokens = build_access_tokens(config, provider, store)
    session_tokens, browser_sessions, backchannel = build_sessions(config, store, provider, login_client)
    return Services(
        store=store,
        provider=provider,
        access_tokens=access_tokens,
        login_client=login_client,
        session_tokens=session_tokens,
        browser_sessions=browser_sessions,
        guard=build_guard(config, store, access_tokens, session_tokens),
        sign_in=build_sign_in(config, store, provider, login_client, session_tokens),
        backchannel_logout=backchannel,
    )


def install_session_interface(app: Flask, config: Config, services: Services) -> None:
    """Flask-Session on the app's Redis, keyed by an HMAC of the cookie."""
    app.session_interface = BffSessionInterface(
        app,
        services.store.redis,
        services.store.keys,
        config.SECRET_KEY,
        migrate=services.session_tokens.migrate if config.SECRET_KEY_FALLBACKS else None,
        confirmed=services.store.confirmed,
    )
