"""Per-client bounds count an IPv6 client per /64 network, not per address (issue 19, point 5)."""

import pytest

from app.addresses import client_key


def test_every_address_of_one_ipv6_64_network_is_one_client():
    first = client_key("2001:db8:1:2:aaaa::1")
    assert first == "2001:db8:1:2::/64"
    assert client_key("2001:db8:1:2:ffff:ffff:ffff:ffff") == first
    assert client_key("2001:db8:1:3::1") != first


def test_an_ipv4_client_is_its_own_address_also_when_mapped_into_ipv6():
    assert client_key("203.0.113.7") == "203.0.113.7"
    assert client_key("::ffff:203.0.113.7") == "203.0.113.7"
    assert client_key("203.0.113.8") != client_key("203.0.113.7")


@pytest.mark.parametrize("address", [None, "", "not-an-address", "fe80::1%eth0"])
def test_an_unusual_address_still_gets_a_key(address):
    assert client_key(address)
