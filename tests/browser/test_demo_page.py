"""The demo page in real headless Chromium: sign in, own profile, poke, cooldown, sign out; and at
every step no token in document.cookie, localStorage or sessionStorage."""

import re
from urllib.parse import parse_qs, urlsplit

import pytest
from playwright.sync_api import expect

from app.sessions.interface import session_ref
from tests.helpers.sealed import opened_token_set
from tests.helpers.settings import SESSION_COOKIE

pytestmark = pytest.mark.browser


def browser_storage(page) -> str:
    return page.evaluate(
        "() => JSON.stringify([document.cookie, Object.entries(localStorage), Object.entries(sessionStorage)])"
    )


def session_tokens(redis, live_app, page) -> list[str]:
    cookie = next(c["value"] for c in page.context.cookies() if c["name"] == SESSION_COOKIE)
    key = f"{live_app.env['REDIS_KEY_PREFIX']}tokens:{session_ref(live_app.env['SECRET_KEY'], cookie)}"
    record = opened_token_set(redis.get(key), live_app.env["SECRET_KEY"], cookie)
    return [record["access_token"], record["refresh_token"], record["id_token"]]


def assert_no_token_in_the_page(page, tokens):
    storage = browser_storage(page)
    assert not any(token and token in storage for token in tokens)
    assert "eyJ" not in storage  # no JWT of any kind


def test_sign_in_profile_poke_cooldown_and_sign_out(page, live_app, redis):
    page.goto(f"{live_app.url}/")
    expect(page.locator("#status")).to_have_text("Signed out")
    page.click("#signin")

    page.fill("#username", "alice")
    page.fill("#password", "demo")
    page.click("button[type=submit]")

    expect(page.locator("#status")).to_have_text("Signed in as alice")
    expect(page.locator("#own-profile")).to_contain_text("@alice")
    expect(page.locator("#own-profile")).to_contain_text("hours_played")
    tokens = session_tokens(redis, live_app, page)
    assert_no_token_in_the_page(page, tokens)
    assert page.evaluate("() => document.cookie") == ""  # the session cookie is HttpOnly

    page.fill("#lookup-username", "Carol")
    page.click("#lookup-form button")
    expect(page.locator("#lookup-result")).to_contain_text("Carol Danvers")

    page.fill("#poke-username", "bob")
    page.click("#poke-form button")
    expect(page.locator("#poke-result")).to_have_text("Poked bob!")
    assert_no_token_in_the_page(page, tokens)

    page.click("#poke-form button")
    expect(page.locator("#poke-result")).to_have_text(re.compile(r"poke on cooldown \(\d+h\d+m\d+s remaining\)"))
    assert_no_token_in_the_page(page, tokens)

    page.click("#signout button")
    page.click("button[name=logout]")  # the provider asks to confirm
    expect(page.locator("#status")).to_have_text("Signed out")
    assert page.url.split("?")[0] == f"{live_app.url}/"
    assert parse_qs(urlsplit(page.url).query).keys() == {"state"}  # the logout state, handed back
    assert_no_token_in_the_page(page, tokens)
    assert not any(c["name"] == SESSION_COOKIE for c in page.context.cookies())


def test_an_unknown_user_lookup_shows_the_plain_text_message(page, live_app):
    page.goto(f"{live_app.url}/")
    expect(page.locator("#status")).to_have_text("Signed out")  # after the page's one silent sign-in
    page.fill("#lookup-username", "nobody")
    page.click("#lookup-form button")
    expect(page.locator("#lookup-result")).to_have_text("user not found")


def sign_in_on(page, live_app, username: str) -> None:
    page.goto(f"{live_app.url}/")
    page.click("#signin")
    page.fill("#username", username)
    page.fill("#password", "demo")
    page.click("button[type=submit]")
    expect(page.locator("#status")).to_have_text(f"Signed in as {username}")


def test_your_sessions_from_two_browsers_and_ending_one_from_the_other(browser, live_app):
    first, second = browser.new_context(), browser.new_context()
    try:
        mine, other = first.new_page(), second.new_page()
        sign_in_on(mine, live_app, "carol")
        sign_in_on(other, live_app, "carol")
        other_id = other.locator("#session-list li.current").get_attribute("data-session-id")
        mine.reload()
        expect(mine.locator(f'#session-list li[data-session-id="{other_id}"]')).to_contain_text("Chrome on Linux")
        expect(mine.locator("#session-list li.current")).to_have_count(1)
        assert "this browser" in mine.locator("#session-list li.current").inner_text()
        mine.click(f'#session-list li[data-session-id="{other_id}"] button')
        expect(mine.locator("#sessions-result")).to_have_text("Session ended.")
        expect(mine.locator(f'#session-list li[data-session-id="{other_id}"]')).to_have_count(0)

        status = other.evaluate("() => fetch('/api/v1/me/profile', {headers: {'X-CSRF': '1'}}).then(r => r.status)")
        assert status == 401
        other.fill("#poke-username", "bob")
        other.click("#poke-form button")
        expect(other.locator("#poke-result")).to_have_text("Your session has ended; please sign in again.")
        expect(other.locator("#status")).to_have_text("Signed out")
        expect(mine.locator("#status")).to_have_text("Signed in as carol")
    finally:
        first.close()
        second.close()
