"""schemathesis against the service's OpenAPI document, /api/v1 and /auth alike, as a client generated
from it would call them: with a real user token, a real application token, a signed-in browser session
(cookie and CSRF header) and no credentials at all. Seeded and bounded: no 5xx, every response conforms
to the document (status, content type, body, the headers it declares, `Cache-Control: no-store` where it
says so), and what the document says needs credentials refuses the same call without them."""

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.core.parameters import ParameterLocation
from schemathesis.specs.openapi.checks import positive_data_acceptance

from app import create_app
from config import Config
from tests.helpers.real_services import delete_prefix, import_demo_users, integration_env
from tests.helpers.settings import CSRF
from tests.helpers.signin import cookie_value, signed_in_client

pytestmark = pytest.mark.integration
FUZZ = settings(
    max_examples=150,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
)
AUTH_FUZZ = settings(FUZZ, max_examples=40)  # nine operations, three of them calling the real provider
ACR_VALUES = "urn:profile-poke:acr:pwd urn:profile-poke:acr:pwd-otp"  # the dev provider's two levels


@pytest.fixture(scope="module")
def fuzz_app(idp, redis_url):
    env = integration_env(idp, redis_url, LOGIN_ACR_VALUES=ACR_VALUES)
    app = create_app(Config(env))
    import_demo_users(app)
    yield app
    delete_prefix(redis_url, env["REDIS_KEY_PREFIX"])


@pytest.fixture(scope="module")
def api_schema(fuzz_app):
    return schemathesis.openapi.from_wsgi("/api/v1/openapi.json", fuzz_app)


@pytest.fixture(scope="module")
def user_headers(idp):
    return {"Authorization": f"Bearer {idp.user_tokens('carol')['access_token']}"}


@pytest.fixture(scope="module")
def app_headers(idp):
    return {"Authorization": f"Bearer {idp.app_token()}"}


def signed_in_script(app) -> dict:
    """What a same-origin script in a browser signed in as bob sends: the session cookie and X-CSRF."""
    name = app.config["SESSION_COOKIE_NAME"]
    return {"headers": CSRF, "cookies": {name: cookie_value(signed_in_client(app, "bob"), name)}}


# The contract answers a schema-valid poke of an unknown user, of oneself or on cooldown with 400, and a
# schema-valid code, state or logout token the provider never issued with 400; no schema can express
# that, so this heuristic check does not apply.
CONTRACT_OVERRIDES = [positive_data_acceptance]
# A sign-in request the provider refuses (through PAR) is the documented 502 page, not the service failing:
# the dev provider refuses prompt=select_account and prompt=create, which it lists nowhere (docs/signin.md).
PROVIDER_REFUSES = 502


@schemathesis.check
def no_server_error_but_the_providers_refusal(ctx, response, case):
    """No 5xx from the service itself; GET /auth/login may pass on the provider's refusal as its 502 page."""
    assert response.status_code < 500 or response.status_code == PROVIDER_REFUSES, (
        f"server error {response.status_code}"
    )
    assert "sign-in unavailable" in response.text or response.status_code < 500


API_OPERATIONS = [
    ("/api/v1/users/{username}", "GET"),
    ("/api/v1/me/profile", "GET"),
    ("/api/v1/pokes", "POST"),
]  # and the document itself, which schemathesis leaves out of the operations it tests
# Each /auth operation as its real caller sends it: a browser's navigation (no credentials), the SPA's
# script before it has a session (X-CSRF alone), a signed-in page's script (the session cookie and
# X-CSRF), the provider (no credentials). The check `ignored_auth` repeats each accepted call without
# the credentials, and with wrong ones, and requires a refusal where the document asks for them.
AUTH_OPERATIONS = [
    ("/auth/login", "GET", "navigation"),
    ("/auth/callback", "GET", "navigation"),
    ("/auth/exchange", "POST", "script"),
    ("/auth/session", "GET", "signed-in script"),
    ("/auth/backchannel-logout", "POST", "provider"),
    ("/auth/sessions", "GET", "signed-in script"),
    ("/auth/sessions/{session_id}", "DELETE", "signed-in script"),
    ("/auth/sessions", "DELETE", "signed-in script"),
]


@pytest.fixture(scope="module")
def callers(fuzz_app):
    script = {"headers": CSRF}
    return {"navigation": {}, "provider": {}, "script": script, "signed-in script": signed_in_script(fuzz_app)}


def fuzz(api_schema, path: str, method: str, sent: dict, fuzz_settings=FUZZ) -> None:
    """Run seeded, bounded valid and invalid cases of one operation with the credentials `sent` (headers,
    cookies), each case checked by every check."""
    operation = api_schema[path][method]
    excluded, added = CONTRACT_OVERRIDES, []
    if (path, method) == ("/auth/login", "GET"):
        excluded, added = [*CONTRACT_OVERRIDES, not_a_server_error], [no_server_error_but_the_providers_refusal]

    @fuzz_settings
    @given(case=st.one_of(operation.as_strategy(mode) for mode in GenerationMode))
    def one_case(case):
        case.call_and_validate(excluded_checks=excluded, additional_checks=added, **as_generated(case, sent))

    one_case()


def as_generated(case, sent: dict) -> dict:
    """`sent`, less what a negative case leaves out or spoils on purpose: a case without the session
    cookie or the CSRF header must go out without it, not with the caller's put back."""
    negative = {
        "cookies": case.meta is not None and case.meta.is_negative_at(ParameterLocation.COOKIE),
        "headers": case.meta is not None and case.meta.is_negative_at(ParameterLocation.HEADER),
    }
    return {where: values for where, values in sent.items() if not negative.get(where)}


def test_the_document_lists_exactly_these_operations(api_schema):
    listed = {(op.ok().path, op.ok().method.upper()) for op in api_schema.get_all_operations()}
    auth = {(path, method) for path, method, _ in AUTH_OPERATIONS} | {("/auth/logout", "POST")}
    assert listed == set(API_OPERATIONS) | auth


@pytest.mark.parametrize(("path", "method"), API_OPERATIONS)
def test_with_a_user_token_nothing_fails_and_everything_conforms(api_schema, user_headers, path, method):
    fuzz(api_schema, path, method, {"headers": user_headers})


@pytest.mark.parametrize(("path", "method"), API_OPERATIONS)
def test_with_an_application_token_nothing_fails_and_everything_conforms(api_schema, app_headers, path, method):
    fuzz(api_schema, path, method, {"headers": app_headers})


@pytest.mark.parametrize(("path", "method", "caller"), AUTH_OPERATIONS)
def test_as_its_callers_send_it_nothing_under_auth_fails_and_everything_conforms(
    api_schema, callers, path, method, caller
):
    fuzz(api_schema, path, method, callers[caller], AUTH_FUZZ)


def test_signing_out_conforms_signed_in_and_after(api_schema, fuzz_app):
    # The first case that passes ends this session: the others sign out a session that has ended.
    fuzz(api_schema, "/auth/logout", "POST", signed_in_script(fuzz_app), AUTH_FUZZ)
