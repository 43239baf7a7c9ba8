"""Where the provider's endpoints come from (issue 19, point 1): OpenID discovery, then RFC 8414
metadata (the well-known segment inserted before the issuer's path, then appended to it; only a
document naming our issuer exactly), then the settings; cached like discovery; and an endpoint the
mode needs and nothing names is a 503 naming its setting, at /readyz and on the API, never "the
identity provider is unavailable". Against a stub issuer serving real HTTP."""

import json
import logging
import time
from urllib.parse import urlsplit

import fakeredis
import pytest
from prometheus_client import REGISTRY

from app import create_app, metrics
from app.errors import EndpointNotConfigured, ProviderUnavailable
from app.health import check_endpoints_in_background
from app.provider import discovery as provider_module
from app.provider.discovery import Provider
from app.provider.metadata import server_metadata_urls
from config import Config
from tests.helpers.apps import introspecting_app
from tests.helpers.clock import FakeClock, finishes_within
from tests.helpers.settings import app_env
from tests.helpers.stub_issuer import StubIssuer

SETTING = "https://settings.example/introspect"


class MetadataIssuer(StubIssuer):
    """The stub issuer with an RFC 7662 endpoint, left out of discovery unless `in_discovery`, and RFC
    8414 documents served at the paths in `served` (path -> document, an HTTP status to answer, a
    (status, JSON body) pair, or a function returning one of these, called as the request comes)."""

    def __init__(self, key):
        super().__init__(key)
        self.introspect_url = f"{self.issuer}/introspect"
        self.in_discovery: dict = {}
        self.served: dict[str, dict | int] = {}

    def rfc8414_path(self) -> str:
        return "/.well-known/oauth-authorization-server" + urlsplit(self.issuer).path

    def appended_path(self) -> str:
        return urlsplit(self.issuer).path + "/.well-known/oauth-authorization-server"

    def server_document(self, **changes) -> dict:
        endpoints = {"introspection_endpoint": self.introspect_url, "revocation_endpoint": f"{self.issuer}/revoke"}
        return {"issuer": self.issuer, **self.discovery(), **endpoints, **changes}

    def discovery(self) -> dict:
        return {**super().discovery(), **self.in_discovery}

    def answer(self, method, path, params, headers):
        if method == "GET" and ".well-known/oauth-authorization-server" in path:
            self.fetches["server_metadata"] += 1
            served = self.served.get(path, 404)
            served = served() if callable(served) else served
            if isinstance(served, tuple):
                return served[0], {}, served[1]
            return (served, {}, {"error": "x"}) if isinstance(served, int) else (200, {}, served)
        if method == "POST" and path.endswith("/introspect"):
            self.fetches["introspection"] += 1
            now = int(time.time())
            return (
                200,
                {},
                {
                    "active": True,
                    "sub": "user-sub-1",
                    "client_id": "profile-poke-web",
                    "scope": "svc:profile.private",
                    "exp": now + 300,
                },
            )
        return super().answer(method, path, params, headers)


@pytest.fixture
def stub(key):
    issuer = MetadataIssuer(key)
    yield issuer
    issuer.stop()


def provider_of(stub, *, required=(), configured=None, discovery_ttl=60.0) -> Provider:
    return Provider(
        stub.issuer,
        timeout=2,
        discovery_ttl=discovery_ttl,
        refetch_interval=30,
        configured=configured,
        required=required,
    )


def test_the_rfc_8414_url_puts_the_well_known_segment_before_the_path_then_after_the_issuer():
    assert server_metadata_urls("https://sso.example/realms/x") == [
        "https://sso.example/.well-known/oauth-authorization-server/realms/x",
        "https://sso.example/realms/x/.well-known/oauth-authorization-server",
    ]
    # Without a path (or only Auth0's trailing slash) both forms are one URL, asked once.
    for issuer in ("https://tenant.example", "https://tenant.example/"):
        assert server_metadata_urls(issuer) == ["https://tenant.example/.well-known/oauth-authorization-server"]
    # Only slashes are trimmed: a path may end in any other character.
    assert server_metadata_urls("https://sso.example/tenants/TX") == [
        "https://sso.example/.well-known/oauth-authorization-server/tenants/TX",
        "https://sso.example/tenants/TX/.well-known/oauth-authorization-server",
    ]


def test_an_endpoint_in_discovery_wins_and_no_rfc_8414_document_is_fetched(stub):
    stub.in_discovery = {"introspection_endpoint": f"{stub.issuer}/from-discovery"}
    stub.served = {stub.rfc8414_path(): stub.server_document()}
    idp = provider_of(stub, configured={"introspection_endpoint": SETTING})
    assert idp.endpoint("introspection_endpoint") == f"{stub.issuer}/from-discovery"
    assert stub.fetches["server_metadata"] == 0


def test_an_endpoint_only_in_rfc_8414_metadata_is_found_there_before_the_setting(stub):
    stub.served = {stub.rfc8414_path(): stub.server_document()}
    idp = provider_of(stub, configured={"introspection_endpoint": SETTING})
    assert idp.endpoint("introspection_endpoint") == stub.introspect_url
    assert stub.fetches["server_metadata"] == 1  # the inserted form answered: the appended one is not asked


def test_the_appended_form_is_asked_when_the_rfc_form_is_not_served(stub):
    stub.served = {stub.appended_path(): stub.server_document()}
    assert provider_of(stub).endpoint("revocation_endpoint") == f"{stub.issuer}/revoke"
    assert stub.fetches["server_metadata"] == 2


def test_rfc_8414_metadata_naming_another_issuer_is_ignored(stub, caplog):
    stub.served = {
        stub.rfc8414_path(): stub.server_document(issuer=f"{stub.issuer}/"),  # one slash off is another issuer
        stub.appended_path(): stub.server_document(
            issuer="https://evil.example", introspection_endpoint="https://evil"
        ),
    }
    idp = provider_of(stub, configured={"introspection_endpoint": SETTING})
    assert idp.endpoint("introspection_endpoint") == SETTING
    origin = f"http://127.0.0.1:{stub.port}"
    assert [record.getMessage() for record in caplog.records if record.name == "app.provider.metadata"] == [
        f"ignored the authorization server metadata at {origin}{path}: it names another issuer"
        for path in (stub.rfc8414_path(), stub.appended_path())
    ]


def test_the_setting_serves_when_neither_document_names_the_endpoint(stub):
    idp = provider_of(stub, required=("introspection_endpoint",), configured={"introspection_endpoint": SETTING})
    assert idp.endpoint("introspection_endpoint") == SETTING
    assert idp.unresolved() == []


def test_a_required_endpoint_found_nowhere_names_its_setting(stub):
    idp = provider_of(stub, required=("introspection_endpoint",))
    with pytest.raises(EndpointNotConfigured) as raised:
        idp.endpoint("introspection_endpoint")
    assert raised.value.status == 503
    assert (
        raised.value.message == "the identity provider lists no introspection_endpoint; set OIDC_INTROSPECTION_ENDPOINT"
    )
    assert [error.setting for error in idp.unresolved()] == ["OIDC_INTROSPECTION_ENDPOINT"]


def test_an_optional_endpoint_found_nowhere_is_none_with_one_warning_naming_its_setting(stub, caplog):
    idp = provider_of(stub)
    with caplog.at_level(logging.WARNING, logger="app.provider.discovery"):
        assert [idp.endpoint("revocation_endpoint") for _ in range(3)] == [None, None, None]
    assert [record.getMessage() for record in caplog.records] == [
        "the identity provider lists no revocation_endpoint and OIDC_REVOCATION_ENDPOINT is not set; doing without it"
    ]


def test_the_rfc_8414_document_is_fetched_once_while_fresh_even_when_none_is_served(stub):
    idp = provider_of(stub, configured={"introspection_endpoint": SETTING})
    for _ in range(5):
        assert idp.endpoint("introspection_endpoint") == SETTING
        assert idp.endpoint("introspection_endpoint_auth_methods_supported") is None
    assert stub.fetches["server_metadata"] == 2  # both forms, once
    assert stub.fetches["discovery"] == 1


def test_the_rfc_8414_document_is_fetched_again_once_stale(stub, monkeypatch):
    clock = FakeClock()
    monkeypatch.setattr(provider_module, "time", clock)
    monkeypatch.setattr("app.provider.metadata.time", clock)
    stub.served = {stub.rfc8414_path(): stub.server_document()}
    idp = provider_of(stub, discovery_ttl=60)
    assert idp.endpoint("introspection_endpoint") == stub.introspect_url
    stub.served = {stub.rfc8414_path(): stub.server_document(introspection_endpoint=f"{stub.issuer}/moved")}
    clock.advance(59)
    assert idp.endpoint("introspection_endpoint") == stub.introspect_url
    clock.advance(1)  # exactly the ttl old: stale
    assert idp.endpoint("introspection_endpoint") == f"{stub.issuer}/moved"
    assert stub.fetches["server_metadata"] == 2


def test_a_failing_rfc_8414_fetch_is_an_outage_retried_no_sooner_than_the_backoff(stub, monkeypatch):
    clock = FakeClock()
    monkeypatch.setattr("app.provider.metadata.time", clock)
    stub.served = {stub.rfc8414_path(): 503}
    idp = provider_of(stub, required=("introspection_endpoint",), configured={"introspection_endpoint": SETTING})
    for _ in range(3):
        with pytest.raises(ProviderUnavailable) as raised:
            idp.endpoint("introspection_endpoint")  # not "set the setting": the provider could not tell
        # what the operator's "identity provider unavailable: ..." line says
        assert str(raised.value) == "the authorization server metadata could not be fetched"
    assert stub.fetches["server_metadata"] == 1
    stub.served = {stub.rfc8414_path(): stub.server_document()}
    clock.advance(provider_module.FAILURE_BACKOFF)
    assert idp.endpoint("introspection_endpoint") == stub.introspect_url


def test_an_rfc_8414_document_slower_than_the_timeout_is_an_outage(stub):
    def slow():
        time.sleep(2)
        return stub.server_document()

    stub.served = {stub.rfc8414_path(): slow}
    idp = Provider(stub.issuer, timeout=0.5, discovery_ttl=60, refetch_interval=30)
    with pytest.raises(ProviderUnavailable):
        # Bounded here: a fetch without the timeout would wait for the document and find the endpoint.
        finishes_within(1.5, lambda: idp.endpoint("introspection_endpoint"))


def test_an_rfc_8414_fetch_is_counted_under_the_endpoint_name_operations_documents(stub, monkeypatch):
    monkeypatch.setattr(metrics, "_enabled", True)  # what a METRICS_TOKEN turns on, for this test only
    labels = {"endpoint": "server_metadata", "outcome": "ok"}
    before = REGISTRY.get_sample_value("pp_idp_requests_total", labels) or 0.0
    stub.served = {stub.rfc8414_path(): stub.server_document()}
    assert provider_of(stub).endpoint("introspection_endpoint") == stub.introspect_url
    assert REGISTRY.get_sample_value("pp_idp_requests_total", labels) - before == 1


@pytest.mark.parametrize(
    "answer", [400, 401, 403, 404, 410, (200, ["not", "an", "object"]), (200, "a JSON string")], ids=str
)
def test_an_answer_that_serves_no_document_counts_as_none_served(stub, answer):
    stub.served = {stub.rfc8414_path(): answer, stub.appended_path(): answer}
    idp = provider_of(stub, configured={"introspection_endpoint": SETTING})
    assert idp.endpoint("introspection_endpoint") == SETTING


@pytest.mark.parametrize("status", [429, 500, 502, 503])
def test_a_throttled_or_failing_provider_is_an_outage_not_a_missing_endpoint(stub, status):
    stub.served = {stub.rfc8414_path(): status}
    idp = provider_of(stub, required=("introspection_endpoint",))
    with pytest.raises(ProviderUnavailable):
        idp.unresolved()


def test_a_stale_rfc_8414_document_serves_while_the_provider_fails(stub, monkeypatch):
    clock = FakeClock()
    monkeypatch.setattr("app.provider.metadata.time", clock)
    stub.served = {stub.rfc8414_path(): stub.server_document()}
    idp = provider_of(stub, discovery_ttl=60)
    assert idp.endpoint("introspection_endpoint") == stub.introspect_url
    stub.served = {stub.rfc8414_path(): 503}
    clock.advance(61)
    assert idp.endpoint("introspection_endpoint") == stub.introspect_url
    assert stub.fetches["server_metadata"] == 2


def logged(capfd) -> list[tuple[str, str]]:
    lines = [json.loads(line) for line in capfd.readouterr().out.splitlines() if line.startswith("{")]
    return [(line["level"], line["message"]) for line in lines if line["logger"] == "app.health"]


def test_the_start_up_check_logs_an_error_naming_the_missing_setting(stub, capfd):
    app = introspecting_app(stub.issuer, LOG_LEVEL="WARNING")
    check_endpoints_in_background(app).join(5)
    message = "the identity provider lists no introspection_endpoint; set OIDC_INTROSPECTION_ENDPOINT"
    assert logged(capfd) == [("error", f"misconfigured: {message}")]


def test_the_start_up_check_logs_nothing_when_every_needed_endpoint_is_found(stub, capfd):
    stub.in_discovery = {"introspection_endpoint": stub.introspect_url, "revocation_endpoint": f"{stub.issuer}/r"}
    check_endpoints_in_background(introspecting_app(stub.issuer, LOG_LEVEL="WARNING")).join(5)
    assert logged(capfd) == []


def test_the_start_up_check_says_so_when_the_provider_cannot_be_read(fake_redis, capfd):
    env = app_env("http://127.0.0.1:1/realms/none", IDP_TIMEOUT="0.5", LOG_LEVEL="WARNING")
    check_endpoints_in_background(create_app(Config(env), redis=fake_redis)).join(5)
    [(level, message)] = logged(capfd)
    assert level == "warning" and message.startswith("identity provider endpoints not checked at start-up")


def read(client):
    return client.get("/api/v1/me/profile", headers={"Authorization": "Bearer opaque-token-1"})


def test_introspection_listed_only_in_rfc_8414_metadata_serves_api_calls(stub):
    stub.served = {stub.rfc8414_path(): stub.server_document()}
    client = introspecting_app(stub.issuer).test_client()
    assert [read(client).status_code for _ in range(3)] == [200, 200, 200]
    assert client.get("/readyz").json["identity_provider"] == "ok"
    assert (stub.fetches["server_metadata"], stub.fetches["introspection"]) == (1, 1)


def test_introspection_found_nowhere_is_a_503_naming_the_setting_at_readyz_and_on_the_api(stub):
    client = introspecting_app(stub.issuer).test_client()
    ready = client.get("/readyz")
    message = "the identity provider lists no introspection_endpoint; set OIDC_INTROSPECTION_ENDPOINT"
    assert (ready.status_code, ready.json["identity_provider"]) == (503, message)
    response = read(client)
    assert (response.status_code, response.json["error"]) == (503, {"code": "unavailable", "message": message})
    assert stub.fetches["introspection"] == 0


def test_a_mode_that_needs_no_introspection_is_ready_without_it(stub):
    client = create_app(Config(app_env(stub.issuer)), redis=fakeredis.FakeRedis()).test_client()
    assert client.get("/readyz").json == {"status": "ready", "redis": "ok", "identity_provider": "ok"}


def test_an_endpoint_setting_must_be_an_absolute_url(stub):
    with pytest.raises(Exception, match="OIDC_INTROSPECTION_ENDPOINT must be an absolute https URL"):
        Config(app_env(stub.issuer, OIDC_INTROSPECTION_ENDPOINT="/introspect"))
