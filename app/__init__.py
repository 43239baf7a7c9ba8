"""The Profile & Poke service: create_app wires config, extensions, blueprints, errors and logging."""

from datetime import timedelta

from flask import Flask
from werkzeug.middleware.proxy_fix import ProxyFix

from config import Config

from .api.guard import Guard
from .api.routes import bp as api_bp
from .api.step_up import StepUpPolicy
from .auth.authorization import AuthorizationRequests
from .auth.backchannel import BackchannelLogout
from .auth.browser_sessions import BrowserSessions
from .auth.flow import SignIn
from .auth.oidc import LoginClient
from .auth.routes import bp as auth_bp
from .auth.session_tokens import SessionTokens
from .auth.sessions import BffSessionInterface
from .cli import users_cli
from .error_responses import register_error_handlers
from .extensions import Services, init_limiter, make_redis
from .health import bp as health_bp
from .json_encoding import CachedEncoderJSONProvider
from .logs import configure_logging
from .metrics import count_redis_error, count_unconfirmed_write, init_metrics
from .security import register_security_headers
from .store import Store
from .store.token_checks import TokenChecks
from .tokens import AccessTokens, IntrospectedTokens, Provider, provider_profile
from .tokens.dpop import DpopNonces, DpopProofs
from .tracing import init_tracing
from .web import bp as web_bp


def create_app(config: Config | None = None, *, redis=None) -> Flask:
    """A configured app; `config` defaults to the environment, `redis` to a client for REDIS_URL."""
    app = Flask(__name__)
    app.json = CachedEncoderJSONProvider(app)
    config = config or Config()
    configure_app(app, config)
    register_extensions(app, config, redis)
    register_blueprints(app)
    register_rate_limits(app, config)
    register_error_handlers(app, count_redis_error=count_redis_error)
    register_security_headers(app)
    configure_logging(app)
    init_metrics(app, active_sessions=app.extensions["profile_poke"].store.token_sets.count_active)
    init_tracing(app, config.OTEL_TRACES_URL)
    configure_proxy(app, config)
    return app


def configure_app(app: Flask, config: Config) -> None:
    """The app's settings from `config`; a session idles out after SESSION_IDLE_TIMEOUT, not re-saved per request."""
    app.config.from_object(config)
    app.config["PERMANENT_SESSION_LIFETIME"] = timedelta(seconds=config.SESSION_IDLE_TIMEOUT)
    app.config["SESSION_REFRESH_EACH_REQUEST"] = False


def register_extensions(app: Flask, config: Config, redis=None) -> None:
    if redis is None:
        redis = make_redis(
            config.REDIS_URL, socket_timeout=config.REDIS_SOCKET_TIMEOUT, tls_verify=config.REDIS_TLS_VERIFY
        )
    store = Store(
        redis,
        config.REDIS_KEY_PREFIX,
        link_unclaimed_profiles=config.LINK_UNCLAIMED_PROFILES,
        max_pending_logins=config.MAX_PENDING_SIGNINS,
        wait_timeout_ms=config.REDIS_WAIT_TIMEOUT_MS,
        on_unconfirmed=count_unconfirmed_write,
    )
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
    profile = provider_profile(
        config.OIDC_PROVIDER_PROFILE,
        subject_claim=config.TOKEN_SUBJECT_CLAIM,
        scope_claim=config.TOKEN_SCOPE_CLAIM,
        username_claim=config.TOKEN_USERNAME_CLAIM,
    )
    login_client = LoginClient(
        provider,
        client_id=config.OIDC_CLIENT_ID,
        scopes=config.OIDC_SCOPES,
        timeout=config.IDP_TIMEOUT,
        leeway=config.TOKEN_LEEWAY,
        profile=profile,
        auth_params=config.OIDC_AUTH_PARAMS,
    )
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
    access_tokens = access_token_validator(config, provider, profile, store)
    browser_sessions = BrowserSessions(
        session_tokens, store.token_sets, store.session_index, login_client, idle_timeout=config.SESSION_IDLE_TIMEOUT
    )
    app.extensions["profile_poke"] = Services(
        store=store,
        provider=provider,
        access_tokens=access_tokens,
        login_client=login_client,
        session_tokens=session_tokens,
        browser_sessions=browser_sessions,
        guard=Guard(
            access_tokens,
            session_tokens,
            store.profiles,
            session_cookie=config.SESSION_COOKIE_NAME,
            proofs=dpop_proofs(config, store),
            step_up=StepUpPolicy(config.STEP_UP_ACR, config.STEP_UP_MAX_AGE),
        ),
        sign_in=SignIn(
            login_client,
            AuthorizationRequests(
                provider,
                client_id=config.OIDC_CLIENT_ID,
                scopes=config.OIDC_SCOPES,
                timeout=config.IDP_TIMEOUT,
                par=config.OIDC_PAR,
                auth_params=config.OIDC_AUTH_PARAMS,
            ),
            store.logins,
            store.profiles,
            session_tokens,
            redirect_uri=config.OIDC_REDIRECT_URI,
            state_ttl=config.LOGIN_STATE_TTL,
            scopes=config.OIDC_SCOPES,
            exchange_redirect_uris=config.EXCHANGE_REDIRECT_URIS,
            post_logout_redirect_uri=config.OIDC_POST_LOGOUT_REDIRECT_URI,
            session_cookie=config.SESSION_COOKIE_NAME,
            idle_timeout=config.SESSION_IDLE_TIMEOUT,
        ),
        backchannel_logout=BackchannelLogout(
            provider,
            store.session_index,
            browser_sessions,
            client_id=config.OIDC_CLIENT_ID,
            leeway=config.TOKEN_LEEWAY,
        ),
    )
    app.session_interface = BffSessionInterface(
        app,
        redis,
        store.keys,
        config.SECRET_KEY,
        migrate=session_tokens.migrate if config.SECRET_KEY_FALLBACKS else None,
        confirmed=store.confirmed,
    )


def access_token_validator(config: Config, provider: Provider, profile, store: Store):
    """Local JWT validation, or RFC 7662 introspection when ACCESS_TOKEN_VALIDATION says so."""
    if config.ACCESS_TOKEN_VALIDATION == "introspection":
        checks = TokenChecks(
            store.redis,
            store.keys,
            per_client=config.RATE_LIMIT_INTROSPECTION,
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


def dpop_proofs(config: Config, store: Store) -> DpopProofs | None:
    """The DPoP proof checks (RFC 9449), with server nonces when DPOP_NONCE is on; None when DPOP is off."""
    if not config.DPOP:
        return None
    nonces = DpopNonces(config.SECRET_KEY) if config.DPOP_NONCE else None
    return DpopProofs(store.seen_proofs, leeway=config.TOKEN_LEEWAY, nonces=nonces)


def register_blueprints(app: Flask) -> None:
    app.register_blueprint(api_bp)
    app.register_blueprint(auth_bp)
    app.register_blueprint(web_bp)
    app.register_blueprint(health_bp)
    app.cli.add_command(users_cli)


def register_rate_limits(app: Flask, config: Config) -> None:
    """Limit the views marked `rate_limited` per client address, counted in the app's Redis."""
    init_limiter(
        app,
        app.extensions["profile_poke"].store.redis,
        url=config.REDIS_URL,
        prefix=config.REDIS_KEY_PREFIX,
        socket_timeout=config.REDIS_SOCKET_TIMEOUT,
    )


def configure_proxy(app: Flask, config: Config) -> None:
    """Trust the X-Forwarded-For and -Proto headers of PROXY_HOPS proxies in front of the app (none by
    default), -Host only when PROXY_FORWARDS_HOST says they set it; never a prefix or a port."""
    if config.PROXY_HOPS:
        hops = config.PROXY_HOPS
        host_hops = hops if config.PROXY_FORWARDS_HOST else 0
        app.wsgi_app = ProxyFix(app.wsgi_app, x_for=hops, x_proto=hops, x_host=host_hops)
