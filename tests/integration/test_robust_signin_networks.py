"""Sign-in limits count networks too (issue 28, point 4): each start is a push to the provider (PAR) and
each callback or SPA exchange may be a token-endpoint call, so many addresses of one network must not
multiply what one address may ask for. On the real limiter, Redis and dev provider, through the trusted
proxy hop (PROXY_HOPS=1, X-Forwarded-For): an IPv4 /24, an IPv6 /56 and its /48, and NAT64 addresses in the
/24 of the IPv4 address they carry, each refused with the network's message once spent, while a client of
another network signs in."""

import pytest
import requests

from dev import oidc_driver
from tests.helpers.pages import error_page_message
from tests.helpers.real_services import PASSWORD
from tests.helpers.settings import CSRF
from tests.helpers.signin import callback_path, start_login

pytestmark = pytest.mark.integration

FROM_NETWORK = "too many requests from this network; try again later"
FROM_ADDRESS = "too many requests from this address; try again later"
DEFAULTS = {"RATE_LIMIT_LOGIN": "", "RATE_LIMIT_LOGIN_NETWORK": ""}  # empty: the shipped defaults, 30 and 300


def starts(client, address: str, count: int) -> list[tuple[int, str | None]]:
    """`count` sign-in starts from `address`: each status, and the page's message when refused."""
    answers = []
    for _ in range(count):
        response = client.get("/auth/login", headers={"X-Forwarded-For": address})
        answers.append((response.status_code, error_page_message(response) if response.status_code != 302 else None))
    return answers


def test_many_addresses_of_one_ipv4_24_share_its_bound_while_another_network_signs_in(make_app, audit_lines):
    app = make_app(PROXY_HOPS="1", **DEFAULTS)
    client = app.test_client()
    # 11 addresses of one /24, each within its own limit of 30: the network's 300 admit the first ten.
    answers = [answer for host in range(1, 12) for answer in starts(client, f"198.51.100.{host}", 30)]
    assert answers == [(302, None)] * 300 + [(429, FROM_NETWORK)] * 30
    refused = client.get("/auth/login", headers={"X-Forwarded-For": "198.51.100.200"})  # a neighbour: shares it
    assert (refused.status_code, error_page_message(refused)) == (429, FROM_NETWORK)
    assert 0 < int(refused.headers["Retry-After"]) <= 60
    reasons = {event["reason"] for event in audit_lines.events() if event["event"] == "ratelimit.hit"}
    assert reasons == {"login_network"}
    # Another network's new browser starts and finishes a real sign-in.
    browser = app.test_client()
    browser.environ_base["HTTP_X_FORWARDED_FOR"] = "203.0.113.5"
    callback = oidc_driver.login_at_idp(requests.Session(), start_login(browser, "/me"), "bob", PASSWORD)
    done = browser.get(callback_path(callback))
    assert (done.status_code, done.headers["Location"]) == (302, "/me")
    assert browser.get("/auth/session").get_json()["user"] == "bob"


def test_a_client_past_its_own_limit_spends_nothing_of_its_networks(make_app):
    client = make_app(
        PROXY_HOPS="1", RATE_LIMIT_LOGIN="2 per minute", RATE_LIMIT_LOGIN_NETWORK="4 per minute"
    ).test_client()
    assert starts(client, "198.51.100.1", 6) == [(302, None)] * 2 + [(429, FROM_ADDRESS)] * 4
    assert starts(client, "198.51.100.2", 3) == [(302, None)] * 2 + [(429, FROM_ADDRESS)]
    assert starts(client, "198.51.100.3", 1) == [(429, FROM_NETWORK)]


def test_an_ipv6_56_has_a_bound_and_its_48_twice_that(make_app):
    client = make_app(
        PROXY_HOPS="1", RATE_LIMIT_LOGIN="2 per minute", RATE_LIMIT_LOGIN_NETWORK="4 per minute"
    ).test_client()
    # Three /64s of one /56: four starts, then the /56 is spent.
    first = [answer for net in range(3) for answer in starts(client, f"2001:db8:7:1{net:02x}::1", 2)]
    assert first == [(302, None)] * 4 + [(429, FROM_NETWORK)] * 2
    # A second /56 of the same /48 has four of its own; then the /48's eight are spent, for a third /56 too.
    second = [answer for net in range(3) for answer in starts(client, f"2001:db8:7:2{net:02x}::1", 2)]
    assert second == [(302, None)] * 4 + [(429, FROM_NETWORK)] * 2
    assert starts(client, "2001:db8:7:300::1", 1) == [(429, FROM_NETWORK)]
    assert starts(client, "2001:db8:8:100::1", 2) == [(302, None)] * 2  # another /48


def test_nat64_addresses_count_in_the_24_of_the_ipv4_address_they_carry(make_app):
    client = make_app(
        PROXY_HOPS="1", RATE_LIMIT_LOGIN="2 per minute", RATE_LIMIT_LOGIN_NETWORK="4 per minute"
    ).test_client()
    assert starts(client, "64:ff9b::c633:6401", 2) == [(302, None)] * 2  # 198.51.100.1
    assert starts(client, "64:ff9b::c633:6402", 2) == [(302, None)] * 2  # 198.51.100.2
    assert starts(client, "198.51.100.3", 1) == [(429, FROM_NETWORK)]
    assert starts(client, "64:ff9b::c633:6501", 1) == [(302, None)]  # 198.51.101.1, another /24


@pytest.mark.parametrize(
    ("path", "setting", "reason"),
    [
        ("/auth/callback", "RATE_LIMIT_LOGIN_NETWORK", "callback_network"),
        ("/auth/exchange", "RATE_LIMIT_EXCHANGE_NETWORK", "exchange_network"),
    ],
)
def test_junk_callbacks_and_exchanges_from_one_network_are_bounded_per_network(
    make_app, audit_lines, path, setting, reason
):
    limits = {"RATE_LIMIT_LOGIN": "2 per minute", "RATE_LIMIT_EXCHANGE": "2 per minute", setting: "4 per minute"}
    client = make_app(PROXY_HOPS="1", **limits).test_client()

    def send(address: str):
        headers = {"X-Forwarded-For": address, **CSRF}
        if path == "/auth/exchange":
            return client.post(
                path, json={"code": "junk", "code_verifier": "v" * 43, "redirect_uri": "/"}, headers=headers
            )
        return client.get(path, query_string={"state": "junk", "code": "junk"}, headers=headers)

    statuses = [send(f"198.51.100.{host}").status_code for host in (1, 1, 2, 2)]
    assert statuses == [400] * 4  # refused for what they are, before any network bound
    refused = send("198.51.100.3")
    message = refused.get_json()["error"]["message"] if path == "/auth/exchange" else error_page_message(refused)
    assert (refused.status_code, message) == (429, FROM_NETWORK)
    assert [event["reason"] for event in audit_lines.events() if event["event"] == "ratelimit.hit"] == [reason]
    assert send("203.0.113.5").status_code == 400  # another network
