"""Rate limits count an IPv6 client per /64 network on the real limiter and Redis (issue 19, point 5):
one host holds a whole /64, so rotating addresses inside it buys no more sign-ins."""

import pytest

from tests.helpers.pages import error_page_message

pytestmark = pytest.mark.integration

LIMITED = "too many requests from this address; try again later"


def starts(client, address: str, count: int) -> list[int]:
    headers = {"X-Forwarded-For": address}
    return [client.get("/auth/login", headers=headers).status_code for _ in range(count)]


def test_two_addresses_of_one_ipv6_64_share_one_sign_in_limit(make_app):
    client = make_app(RATE_LIMIT_LOGIN="3 per minute", PROXY_HOPS="1").test_client()
    assert starts(client, "2001:db8:5:6::1", 2) == [302, 302]
    assert starts(client, "2001:db8:5:6:ffff:1234:abcd:9", 2) == [302, 429]
    refused = client.get("/auth/login", headers={"X-Forwarded-For": "2001:db8:5:6::77"})
    assert (refused.status_code, error_page_message(refused)) == (429, LIMITED)
    assert 0 < int(refused.headers["Retry-After"]) <= 60


def test_another_ipv6_64_has_a_limit_of_its_own(make_app):
    client = make_app(RATE_LIMIT_LOGIN="3 per minute", PROXY_HOPS="1").test_client()
    assert starts(client, "2001:db8:5:6::1", 4) == [302, 302, 302, 429]
    assert starts(client, "2001:db8:5:7::1", 3) == [302, 302, 302]
