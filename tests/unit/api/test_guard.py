"""The API guard on its own: what counts as a bearer token, and who may call, refused in the contract's
order (401, then 403 insufficient_scope, then 403 forbidden), on fakeredis with the stub issuer."""

import pytest
from flask import g, request

from app.api import guard
from app.api.guard import require_enabled
from app.challenges import Forbidden, InsufficientScope, InvalidToken, Unauthorized
from app.extensions import services
from app.store.profile_record import Profile
from tests.helpers.settings import CSRF, SESSION_COOKIE

SCOPE = "svc:profile.private"
NOT_BEARER = "the Authorization header is not a bearer token"
SID = "the-session-cookie"


@pytest.fixture
def alice(unit_app):
    with unit_app.app_context():
        services().store.profiles.put(Profile("alice", "@alice", "Alice Liddell", sub="user-sub-1"))


def context(app, *, token: str | None = None, cookie: str | None = None, csrf: bool = False, **headers):
    """A request context carrying a bearer token, a session cookie and the CSRF header as asked."""
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    if csrf:
        headers.update(CSRF)
    if cookie is not None:
        headers["Cookie"] = f"{SESSION_COOKIE}={cookie}"
    return app.test_request_context("/api/v1/me/profile", headers=headers)


# The guard's checks as the views reach them: through the app's wired Guard.
def bearer_token():
    sent = guard.credential(request.headers, dpop=True)
    return sent.token if sent is not None else None


def optional_principal():
    return services().guard.optional_principal()


def required_principal():
    return services().guard.required_principal()


def authorize(scope):
    return services().guard.authorize(scope)


def current_username(scope):
    return services().guard.authorize(scope).username


def current_user(scope):
    return services().guard.enabled_profile(services().guard.authorize(scope))


def session_with(app, access_token: str, *, username: str = "alice", **proof) -> None:
    """A signed-in browser session SID whose access token is `access_token` (`proof`: acr, amr, auth_time)."""
    with app.app_context():
        services().session_tokens.start(
            SID,
            username=username,
            sub="user-sub-1",
            response={"access_token": access_token, "expires_in": 300},
            **proof,
        )


@pytest.mark.parametrize(
    ("header", "token"),
    [
        ("Bearer abc.def.ghi", "abc.def.ghi"),
        ("bearer abc.def.ghi", "abc.def.ghi"),
        ("BEARER abc.def.ghi", "abc.def.ghi"),
        ("  Bearer abc.def.ghi  ", "abc.def.ghi"),
        ("Bearer    abc.def.ghi", "abc.def.ghi"),
    ],
)
def test_a_bearer_header_yields_its_token_whatever_the_scheme_case_and_spacing(unit_app, header, token):
    with unit_app.test_request_context(headers={"Authorization": header}):
        assert bearer_token() == token


@pytest.mark.parametrize(
    "header", ["", "Bearer", "Bearer    ", "Basic YWxpY2U6c2VjcmV0", "abc.def.ghi", "Bearer abc def", "Bearerabc"]
)
def test_an_authorization_header_that_is_not_one_bearer_token_is_invalid(unit_app, header):
    with unit_app.test_request_context(headers={"Authorization": header}), pytest.raises(InvalidToken) as refused:
        bearer_token()
    assert refused.value.message == NOT_BEARER


def test_no_authorization_header_means_no_bearer_token(unit_app):
    with unit_app.test_request_context():
        assert bearer_token() is None


def test_a_public_route_has_no_principal_without_a_token_even_with_a_session_cookie(unit_app):
    with context(unit_app, cookie=SID, csrf=True):
        assert optional_principal() is None


def test_a_public_route_names_the_principal_of_a_valid_token(unit_app, stub_issuer):
    with context(unit_app, token=stub_issuer.sign(stub_issuer.access_claims())):
        assert optional_principal().subject == "user-sub-1"


def test_a_public_route_refuses_an_invalid_token(unit_app, stub_issuer):
    token = stub_issuer.sign(stub_issuer.access_claims(aud="another-api"))
    with context(unit_app, token=token), pytest.raises(InvalidToken) as refused:
        optional_principal()
    assert refused.value.message == "the access token is not meant for this API"


def test_a_protected_route_without_token_or_cookie_is_401_authentication_required(unit_app):
    with context(unit_app), pytest.raises(Unauthorized) as refused:
        required_principal()
    assert (refused.value.status, refused.value.message) == (401, "authentication required")


def test_an_empty_session_cookie_counts_as_none(unit_app):
    with context(unit_app, cookie="", csrf=True), pytest.raises(Unauthorized, match="authentication required"):
        required_principal()


def test_a_cookie_call_without_the_csrf_header_is_403_before_the_session_is_read(unit_app):
    with context(unit_app, cookie="no-such-session"), pytest.raises(Forbidden) as refused:
        required_principal()
    assert refused.value.message == "cookie-authenticated calls need the header X-CSRF: 1"


def test_a_cookie_call_with_the_header_gets_the_principal_of_the_sessions_token(unit_app, stub_issuer):
    session_with(unit_app, stub_issuer.sign(stub_issuer.access_claims()))
    with context(unit_app, cookie=SID, csrf=True):
        principal, profile = required_principal()
    assert (principal.subject, profile) == ("user-sub-1", None)


def test_a_bearer_token_wins_over_a_session_cookie(unit_app, stub_issuer):
    session_with(unit_app, stub_issuer.sign(stub_issuer.access_claims(sub="session-sub")))
    with context(unit_app, token=stub_issuer.sign(stub_issuer.access_claims()), cookie=SID):
        principal, profile = required_principal()
    assert (principal.subject, profile) == ("user-sub-1", None)


def test_the_token_a_session_holds_is_checked_like_a_bearer_token(unit_app, stub_issuer):
    session_with(unit_app, stub_issuer.sign(stub_issuer.access_claims(iss="https://evil.example/realms/stub")))
    with context(unit_app, cookie=SID, csrf=True), pytest.raises(InvalidToken) as refused:
        required_principal()
    assert refused.value.message == "the access token has the wrong issuer"


def test_a_token_without_the_scope_is_403_insufficient_scope_naming_it(unit_app, stub_issuer, alice):
    token = stub_issuer.sign(stub_issuer.access_claims(scope="svc:interact.poke"))
    with context(unit_app, token=token), pytest.raises(InsufficientScope) as refused:
        authorize(SCOPE)
    assert (refused.value.status, refused.value.message) == (403, f"scope {SCOPE} required")


def test_an_application_token_with_the_scope_is_403_forbidden(unit_app, stub_issuer, alice):
    token = stub_issuer.sign(stub_issuer.access_claims(client_id="a-backend-service", sub="a-backend-service"))
    with context(unit_app, token=token), pytest.raises(Forbidden) as refused:
        authorize(SCOPE)
    assert refused.value.message == "a user-delegated token is required"


def test_the_scope_is_checked_before_the_kind_of_token(unit_app, stub_issuer):
    token = stub_issuer.sign(stub_issuer.access_claims(client_id="a-backend-service", scope=""))
    with context(unit_app, token=token), pytest.raises(InsufficientScope):
        authorize(SCOPE)


def test_a_user_token_names_the_linked_username_and_keeps_it_for_the_access_log(unit_app, stub_issuer, alice):
    with context(unit_app, token=stub_issuer.sign(stub_issuer.access_claims(preferred_username="someone-else"))):
        assert authorize(SCOPE)[:2] == ("alice", None)
        assert g.user == "alice"


def test_a_new_subject_is_linked_to_a_new_profile_named_by_its_preferred_username(unit_app, stub_issuer):
    token = stub_issuer.sign(stub_issuer.access_claims(sub="sub-of-carol", preferred_username="Carol", name="Carol C"))
    with context(unit_app, token=token):
        assert current_username(SCOPE) == "carol"
        assert services().store.profiles.get("carol").display_name == "Carol C"


def test_a_username_owned_by_another_subject_is_403_and_a_warning_names_both(unit_app, stub_issuer, alice, caplog):
    token = stub_issuer.sign(stub_issuer.access_claims(sub="another-sub", preferred_username="alice"))
    with context(unit_app, token=token), pytest.raises(Forbidden) as refused:
        authorize(SCOPE)
    assert refused.value.message == "this account's username belongs to another account"
    assert [r.getMessage() for r in caplog.records if r.getMessage().startswith("refused subject link")] == [
        "refused subject link: username alice is taken: subject another-sub, owner user-sub-1"
    ]


def test_a_new_subject_whose_username_claim_is_no_valid_username_is_403_with_what_to_do(unit_app, stub_issuer):
    token = stub_issuer.sign(stub_issuer.access_claims(sub="sub-of-dave", preferred_username="dave smith"))
    with context(unit_app, token=token), pytest.raises(Forbidden) as refused:
        authorize(SCOPE)
    assert refused.value.message == (
        "this account's username is not a valid username here; an operator must import its profile "
        "with its subject, or set TOKEN_USERNAME_CLAIM"
    )


def test_a_new_subject_without_a_preferred_username_is_403_no_profile(unit_app, stub_issuer):
    token = stub_issuer.sign(stub_issuer.access_claims(sub="sub-of-nobody", preferred_username=None))
    with context(unit_app, token=token), pytest.raises(Forbidden) as refused:
        authorize(SCOPE)
    assert refused.value.message == "this account has no profile"


def test_a_cookie_call_is_judged_by_how_its_session_signed_in_not_by_its_access_token(unit_app, stub_issuer, alice):
    token = stub_issuer.sign(stub_issuer.access_claims(acr="urn:dev:loa:1", auth_time=1_700_000_000))
    session_with(unit_app, token, acr="urn:dev:loa:2", amr=["pwd", "otp"], auth_time=1_790_000_000)
    with context(unit_app, cookie=SID, csrf=True):
        principal, _ = required_principal()
    assert (principal.acr, principal.auth_time) == ("urn:dev:loa:2", 1_790_000_000)


def test_the_profile_a_session_read_with_its_token_is_returned_without_another_read(unit_app, stub_issuer, alice):
    session_with(unit_app, stub_issuer.sign(stub_issuer.access_claims()))
    with context(unit_app, cookie=SID, csrf=True):
        authorize(SCOPE)  # the first call teaches the process the session's user
    with context(unit_app, cookie=SID, csrf=True):
        username, profile = authorize(SCOPE)[:2]
    assert (username, profile.display_name) == ("alice", "Alice Liddell")


def test_a_profile_the_session_read_for_another_user_is_not_the_callers(unit_app, stub_issuer, alice):
    with unit_app.app_context():
        services().store.profiles.put(Profile("bob", "@bob", "Bob", sub="sub-bob"))
    session_with(unit_app, stub_issuer.sign(stub_issuer.access_claims()), username="bob")
    for _ in range(2):  # the second call reads bob's profile with the token, which names alice
        with context(unit_app, cookie=SID, csrf=True):
            assert authorize(SCOPE)[:2] == ("alice", None)
            assert current_user(SCOPE).username == "alice"


def test_the_current_user_is_read_from_the_store_when_the_credential_came_without_it(unit_app, stub_issuer, alice):
    with context(unit_app, token=stub_issuer.sign(stub_issuer.access_claims())):
        assert current_user(SCOPE).handle == "@alice"


def test_a_disabled_user_is_403_the_account_is_disabled(unit_app, stub_issuer, alice):
    with unit_app.app_context():
        services().store.profiles.set_disabled("alice", True)
    with context(unit_app, token=stub_issuer.sign(stub_issuer.access_claims())), pytest.raises(Forbidden) as refused:
        current_user(SCOPE)
    assert refused.value.message == "the account is disabled"


def test_a_user_whose_linked_profile_is_gone_is_403_no_profile(unit_app, stub_issuer, fake_redis, alice):
    with unit_app.app_context():
        fake_redis.delete(services().store.keys.user("alice"))
    with context(unit_app, token=stub_issuer.sign(stub_issuer.access_claims())), pytest.raises(Forbidden) as refused:
        current_user(SCOPE)
    assert refused.value.message == "this account has no profile"


@pytest.mark.parametrize(
    ("profile", "message"),
    [
        (None, "this account has no profile"),
        (Profile("dora", "@dora", "Dora", disabled=True), "the account is disabled"),
    ],
)
def test_require_enabled_refuses_a_missing_or_disabled_profile(profile, message):
    with pytest.raises(Forbidden) as refused:
        require_enabled(profile)
    assert refused.value.message == message


def test_require_enabled_returns_an_enabled_profile():
    profile = Profile("alice", "@alice", "Alice")
    assert require_enabled(profile) is profile
