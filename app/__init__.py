"""The Profile & Poke service: create_app wires config, extensions, blueprints, errors and logging."""

from datetime import timedelta

import click
from flask import Flask
from werkzeug.middleware.proxy_fix import ProxyFix

from config import Config, ConfigError

from .api.routes import bp as api_bp
from .audit import known_series
from .auth.routes import bp as auth_bp
from .cli import ConfigProblem, users_cli
from .error_responses import register_error_handlers
from .extensions import init_limiter, make_redis
from .health import bp as health_bp
from .json_encoding import CachedEncoderJSONProvider
from .last_resort import AnswerEveryRequest
from .logs import configure_logging
from .metrics import AUDIT_EVENTS, count_redis_error
from .metrics_endpoint import init_metrics
from .routing import ProfilePokeFlask
from .security import register_security_headers
from .tracing import init_tracing
from .web import bp as web_bp
from .wiring import build_services, install_session_interface


def create_app(config: Config | None = None, *, redis=None) -> Flask:
    """A configured app; `config` defaults to the environment, `redis` to a client for REDIS_URL."""
    app = ProfilePokeFlask(__name__)
    app.json = CachedEncoderJSONProvider(app)
    config = config or configuration()
    configure_app(app, config)
    register_extensions(app, config, redis)
    register_blueprints(app)
    register_rate_limits(app, config)
    register_error_handlers(app, count_redis_error=count_redis_error)
    register_security_headers(app)
    configure_logging(app)
    init_metrics(
        app,
        active_sessions=app.extensions["profile_poke"].store.token_sets.active.count,
        known={AUDIT_EVENTS: known_series()},
    )
    init_tracing(app, config.OTEL_TRACES_URL, config.OTEL_PROPAGATORS)
    configure_proxy(app, config)
    app.wsgi_app = AnswerEveryRequest(app.wsgi_app)
    return app


def configuration() -> Config:
    """The environment's configuration; under a `flask` command, a ConfigError ends the command with one
    line naming the setting (exit 2), where a server shows the traceback of its failed start."""
    try:
        return Config()
    except ConfigError as error:
        if click.get_current_context(silent=True) is None:
            raise
        raise ConfigProblem(str(error)) from None


def configure_app(app: Flask, config: Config) -> None:
    """The app's settings from `config`; a session idles out after SESSION_IDLE_TIMEOUT, not re-saved per request."""
    app.config.from_object(config)
    app.config["PERMANENT_SESSION_LIFETIME"] = timedelta(seconds=config.SESSION_IDLE_TIMEOUT)
    app.config["SESSION_REFRESH_EACH_REQUEST"] = False


def register_extensions(app: Flask, config: Config, redis=None) -> None:
    """Every wing's services on `app.extensions["profile_poke"]`, over `redis` (or one for REDIS_URL)."""
    if redis is None:
        redis = make_redis(
            config.REDIS_URL, socket_timeout=config.REDIS_SOCKET_TIMEOUT, tls_verify=config.REDIS_TLS_VERIFY
        )
    services = build_services(config, redis)
    app.extensions["profile_poke"] = services
    install_session_interface(app, config, services)


def register_blueprints(app: Flask) -> None:
    """The /api/v1, /auth, demo page and probe blueprints, and the `flask users` commands."""
    app.register_blueprint(api_bp)
    app.register_blueprint(auth_bp)
    app.register_blueprint(web_bp)
    app.register_blueprint(health_bp)
    app.cli.add_command(users_cli)


def register_rate_limits(app: Flask, config: Config) -> None:
    """Limit the views marked `rate_limited` per client address, counted in the app's Redis."""
    store = app.extensions["profile_poke"].store
    init_limiter(
        app,
        store.redis,
        url=config.REDIS_URL,
        key_prefix=store.keys.rate_limits(),
        socket_timeout=config.REDIS_SOCKET_TIMEOUT,
    )


def configure_proxy(app: Flask, config: Config) -> None:
    """Trust the X-Forwarded-For and -Proto headers of PROXY_HOPS proxies in front of the app (none by
    default), -Host only when PROXY_FORWARDS_HOST says they set it; never a prefix or a port."""
    if config.PROXY_HOPS:
        hops = config.PROXY_HOPS
        host_hops = hops if config.PROXY_FORWARDS_HOST else 0
        app.wsgi_app = ProxyFix(app.wsgi_app, x_for=hops, x_proto=hops, x_host=host_hops)
