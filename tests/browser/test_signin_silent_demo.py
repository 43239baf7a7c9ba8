"""The demo page's silent sign-in in real headless Chromium against the gunicorn app, the real dev
provider (with PAR) and Redis: once per tab, it signs a browser with a provider session in without a
click, and leaves one without a provider session signed out with no loop and no message."""

import pytest
from playwright.sync_api import expect

pytestmark = pytest.mark.browser

HINT = "You are signed in at the identity provider: one click to continue."


def sign_in_attempts(page) -> list[str]:
    """Every /auth/login request the page makes, recorded from now on."""
    seen = []
    page.on("request", lambda request: seen.append(request.url) if "/auth/login" in request.url else None)
    return seen


def test_without_a_provider_session_the_page_tries_once_and_stays_signed_out_without_a_message(page, live_app):
    attempts = sign_in_attempts(page)
    page.goto(f"{live_app.url}/?tab=people")
    expect(page.locator("#status")).to_have_text("Signed out")
    expect(page.locator("#signin")).to_be_visible()
    expect(page.locator("#signin-hint")).to_be_hidden()
    assert page.url == f"{live_app.url}/?tab=people"  # signin_error=login_required read and taken off
    assert len(attempts) == 1 and "prompt=none" in attempts[0]
    page.reload()
    expect(page.locator("#status")).to_have_text("Signed out")
    assert len(attempts) == 1  # no second try in this tab, so no loop


def test_with_a_provider_session_and_no_app_session_a_new_tab_signs_in_without_a_click(browser, live_app):
    context = browser.new_context()
    try:
        first = context.new_page()
        first.goto(f"{live_app.url}/")
        expect(first.locator("#status")).to_have_text("Signed out")
        first.click("#signin")
        first.fill("#username", "alice")
        first.fill("#password", "demo")
        first.click("button[type=submit]")
        expect(first.locator("#status")).to_have_text("Signed in as alice")
        # Sign out of the app only: the provider session stays (its logout page is never confirmed).
        status = first.evaluate(
            "() => fetch('/auth/logout', {method: 'POST', headers: {'X-CSRF': '1'}}).then(r => r.status)"
        )
        assert status == 200
        tab = context.new_page()
        attempts = sign_in_attempts(tab)
        tab.goto(f"{live_app.url}/")
        expect(tab.locator("#status")).to_have_text("Signed in as alice")
        expect(tab.locator("#own-profile")).to_contain_text("@alice")
        expect(tab.locator("#signin-hint")).to_be_hidden()
        assert len(attempts) == 1 and "prompt=none" in attempts[0]
    finally:
        context.close()


def test_an_answer_that_needs_a_click_shows_one_click_to_continue(page, live_app):
    page.goto(f"{live_app.url}/?signin_error=interaction_required")
    expect(page.locator("#signin-hint")).to_have_text(HINT)
    expect(page.locator("#status")).to_have_text("Signed out")
    assert page.url == f"{live_app.url}/"
