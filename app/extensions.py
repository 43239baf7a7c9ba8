"""The app's long-lived collaborators, built by create_app and reached by the views through the app:
one Redis client, the provider, token checks, the login client, the sessions, and the rate limiter."""

from dataclasses import dataclass
from functools import partial, wraps
from urllib.parse import unquote, urlsplit

import redis
from flask import Flask, current_app, request
from flask_limiter import Limiter
from limits import parse
from redis.backoff import NoBackoff
from redis.cluster import ClusterNode, RedisCluster
from redis.retry import Retry
from redis.sentinel import Sentinel

from .addresses import NETWORK_SCOPE, client_key, client_networks
from .api.guard import Guard
from .auth.flow import SignIn
from .provider import LoginClient, Provider
from .sessions.backchannel import BackchannelLogout
from .sessions.credentials import SessionTokens
from .sessions.per_user import BrowserSessions
from .store import Store
from .tokens import AccessTokens, IntrospectedTokens

RATE_LIMIT_SETTING = "rate_limit_setting"  # the attribute a rate-limited view carries


@dataclass(frozen=True)
class Services:
    store: Store
    provider: Provider
    access_tokens: AccessTokens | IntrospectedTokens  # by ACCESS_TOKEN_VALIDATION
    login_client: LoginClient
    session_tokens: SessionTokens
    browser_sessions: BrowserSessions
    guard: Guard
    sign_in: SignIn
    backchannel_logout: BackchannelLogout


CLUSTER_SCHEMES = {"redis+cluster": False, "rediss+cluster": True}
SENTINEL_SCHEMES = {"redis+sentinel": False, "rediss+sentinel": True}


def make_redis(url: str, *, socket_timeout: float, tls_verify: bool = True):
    """A redis-py client for `url` whose every call gives up after `socket_timeout` seconds: a cluster client
    for `redis+cluster://host:port[,host:port]`, the current master of a Sentinel-managed service for
    `redis+sentinel://[:password@]host:port[,host:port]/service_name[/db]` (`rediss+`: TLS)."""
    parts = urlsplit(url)
    options = {"socket_timeout": socket_timeout, "socket_connect_timeout": socket_timeout}
    if parts.scheme.startswith("rediss") and not tls_verify:
        options["ssl_cert_reqs"] = "none"  # Heroku Redis presents a self-signed certificate
    if parts.scheme not in CLUSTER_SCHEMES | SENTINEL_SCHEMES:
        return redis.Redis.from_url(url, health_check_interval=30, **options)
    if parts.username:
        options["username"] = unquote(parts.username)
    if parts.password:
        options["password"] = unquote(parts.password)
    # One retry (a MOVED after a resharding, a master that moved), no backoff: a request must fail near
    # the timeout, and the client finds the new master for the next one.
    retry = Retry(NoBackoff(), retries=1)
    if parts.scheme in SENTINEL_SCHEMES:
        return _sentinel_master(parts, options, retry, ssl=SENTINEL_SCHEMES[parts.scheme])
    return RedisCluster(
        startup_nodes=[ClusterNode(host, port) for host, port in _addresses(parts)],
        ssl=CLUSTER_SCHEMES[parts.scheme],
        retry=retry,
        **options,
    )


def _sentinel_master(parts, options: dict, retry: Retry, *, ssl: bool):
    """A client of the master the sentinels of `parts` name now, asked again whenever a connection to it fails;
    the URL's password goes to the sentinels too."""
    service, _, db = parts.path.strip("/").partition("/")
    options["ssl"] = ssl
    # A sentinel that does not answer is skipped at once for the next one, not retried.
    sentinels = Sentinel(_addresses(parts, 26379), sentinel_kwargs={**options, "retry": Retry(NoBackoff(), retries=0)})
    return sentinels.master_for(service, db=int(db or 0), retry=retry, health_check_interval=30, **options)


def _addresses(parts, default_port: int = 6379) -> list[tuple[str, int]]:
    hosts = parts.netloc.rpartition("@")[2]
    return [(host, int(port or default_port)) for host, _, port in (h.partition(":") for h in hosts.split(","))]


def rate_limited(setting: str, *, network: str | None = None):
    """Limit the view per client (an address, or an IPv6 /64) to what the configuration value
    `setting` says (such as RATE_LIMIT_LOGIN) and, with `network`, per network too: each IPv4 /24 and
    IPv6 /56 to what that setting says, each IPv6 /48 to twice it; init_limiter finds every view so marked."""

    def mark(view):
        setattr(view, RATE_LIMIT_SETTING, (setting, network))
        return view

    return mark


def init_limiter(app: Flask, client, *, url: str, key_prefix: str, socket_timeout: float) -> None:
    """A rate limiter of this app's own on the same Redis as everything else (its keys under `key_prefix`),
    counting per client (an address, or an IPv6 /64: app.addresses) and per network, for each view marked
    `rate_limited`. One per app: Flask-Limiter merges the storage options of every app one Limiter is bound to."""
    limits = {
        endpoint: getattr(view, RATE_LIMIT_SETTING)
        for endpoint, view in app.view_functions.items()
        if hasattr(view, RATE_LIMIT_SETTING)
    }
    options = {"key_prefix": key_prefix}
    parts = urlsplit(url)
    if parts.scheme in CLUSTER_SCHEMES:
        uri = f"redis+cluster://{parts.netloc}"
        options.update(ssl=CLUSTER_SCHEMES[parts.scheme], socket_timeout=socket_timeout)
        # The app's own client's retry: redis-py's default (10, with backoff) holds a sign-in for seconds in a failover.
        options.update(socket_connect_timeout=socket_timeout, retry=Retry(NoBackoff(), retries=1))
    else:
        uri = "redis://"  # the app's own connection pool (a Sentinel's too) is handed over below
        options["connection_pool"] = client.connection_pool
    # Per client: ProxyFix has already put the real address in remote_addr when PROXY_HOPS is set.
    registries = (app.before_request_funcs, app.after_request_funcs, app.teardown_request_funcs)
    counts = [len(registry.get(None, ())) for registry in registries]
    # The first limit breached ends the count, and a view's client limit comes before its network's: a
    # client past its own bound spends none of its network's.
    limiter = Limiter(
        _client, app=app, strategy="fixed-window", storage_uri=uri, storage_options=options, fail_on_first_breach=True
    )
    # Flask-Limiter hooks itself into every request (about 70 µs of CPU each). With no default limits
    # only the limited endpoints need its hooks, so they move to those endpoints' blueprints, where
    # Flask runs them for that blueprint's requests alone, and there run only for those endpoints.
    blueprints = {endpoint.rpartition(".")[0] for endpoint in limits}
    for registry, count in zip(registries, counts, strict=True):
        hooks = registry.get(None, [])
        added, hooks[count:] = hooks[count:], []
        for blueprint in blueprints:
            registry.setdefault(blueprint, []).extend(_only_on(frozenset(limits), hook) for hook in added)
    for endpoint, (setting, network) in limits.items():
        view = limiter.limit(lambda setting=setting: app.config[setting])(app.view_functions[endpoint])
        for depth, times in ((1, 1), (2, 2)) if network else ():
            view = limiter.limit(
                lambda network=network, times=times: _times(app.config[network], times),
                key_func=partial(_network, depth),
                exempt_when=partial(_without_network, depth),
                scope=NETWORK_SCOPE,
            )(view)
        app.view_functions[endpoint] = view
    app.extensions["rate_limiter"] = limiter


def _client() -> str:
    """The client the current request counts against."""
    return client_key(request.remote_addr)


def _network(depth: int) -> str:
    """The network around the current request's client that is counted at `depth` (1: its IPv4 /24 or
    IPv6 /56, 2: its IPv6 /48), as app.addresses.client_networks names them."""
    return client_networks(request.remote_addr)[depth]


def _without_network(depth: int) -> bool:
    """Whether the current request's client has no network at `depth` (an IPv4 one has no /48)."""
    return len(client_networks(request.remote_addr)) <= depth


def _times(limit: str, times: int) -> str:
    """One fixed-window limit such as '300 per minute' with `times` as many requests in its window."""
    item = parse(limit)
    return f"{item.amount * times} per {item.multiples} {item.GRANULARITY.name}"


def _only_on(endpoints: frozenset[str], hook):
    """`hook` (a before, after or teardown request function) run only for requests to `endpoints`."""

    @wraps(hook)
    def run(*args):
        if request.endpoint in endpoints:
            return hook(*args)
        return args[0] if args else None  # an after_request hook hands the response on untouched

    return run


def services() -> Services:
    """The collaborators of the app handling the current request."""
    return current_app.extensions["profile_poke"]
