"""The step-up loop on the demo page in real headless Chromium, as `make dev` runs it (STEP_UP_ACR the
one-time-code level, LOGIN_ACR_VALUES both levels): sign in with a password, poke, "a stronger
sign-in is needed", sign in again with the one-time code, poke succeeds."""

import pytest
from playwright.sync_api import expect

from dev.oidc_driver import ACR_OTP, ACR_PASSWORD
from dev.services import free_port
from tests.helpers.real_services import PASSWORD, delete_prefix, integration_env, start_live_app, start_own_idp

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def step_up_app(workdir, redis_url):
    """The app under gunicorn with step-up on, and a dev provider of its own that accepts it."""
    port = free_port()
    idp_server, provider = start_own_idp(workdir, [port])
    env = integration_env(provider, redis_url, LOGIN_ACR_VALUES=f"{ACR_PASSWORD} {ACR_OTP}", STEP_UP_ACR=ACR_OTP)
    try:
        app_server, live = start_live_app(env, port, workdir)
    except Exception:
        idp_server.stop()
        raise
    yield live
    app_server.stop()
    idp_server.stop()
    delete_prefix(redis_url, env["REDIS_KEY_PREFIX"])


def sign_in_at_the_provider(page, username: str) -> None:
    page.fill("#username", username)
    page.fill("#password", PASSWORD)
    page.click("button[type=submit]")


def session_check(page) -> dict:
    return page.evaluate("async () => (await fetch('/auth/session')).json()")


def test_a_poke_asks_for_a_stronger_sign_in_and_succeeds_after_it(page, step_up_app):
    page.goto(f"{step_up_app.url}/")
    page.click("#signin")
    sign_in_at_the_provider(page, "alice")
    expect(page.locator("#status")).to_have_text("Signed in as alice")
    assert session_check(page)["acr"] == ACR_PASSWORD

    page.fill("#poke-username", "bob")
    page.click("#poke-form button")
    expect(page.locator("#poke-result")).to_have_text(
        f"A stronger sign-in is needed: a stronger sign-in is required (acr {ACR_OTP})"
    )
    expect(page.locator("#step-up")).to_be_visible()

    page.click("#step-up-link")
    sign_in_at_the_provider(page, "alice")  # the provider asks for the password again, then the code
    expect(page.locator("h1")).to_have_text("One-time code")
    page.fill("#otp", page.locator("#dev-otp").inner_text())
    page.click("button[type=submit]")

    expect(page.locator("#status")).to_have_text("Signed in as alice")
    assert session_check(page)["acr"] == ACR_OTP
    expect(page.locator("#poke-username")).to_have_value("bob")  # return_to kept the poke's target
    page.click("#poke-form button")
    expect(page.locator("#poke-result")).to_have_text("Poked bob!")
    expect(page.locator("#step-up")).to_be_hidden()


def test_a_wrong_one_time_code_is_refused_at_the_provider(page, step_up_app):
    page.goto(f"{step_up_app.url}/auth/login?acr_values={ACR_OTP}&return_to=/")
    sign_in_at_the_provider(page, "carol")
    page.fill("#otp", "000000")
    page.click("button[type=submit]")
    expect(page.locator("#error")).to_have_text("Wrong code.")
    assert page.url.startswith(step_up_app.url) is False  # still at the provider, not signed in
