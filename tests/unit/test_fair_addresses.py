"""Counting networks (issue 28): a client is counted under its address (an IPv6 /64) and under the
networks around it (IPv4 /24; IPv6 /56 and /48), and a NAT64 address under the IPv4 address it carries,
so the IPv4 users behind one IPv6-only edge are not one client."""

import pytest

from app.addresses import client_key, client_networks


def test_an_ipv4_client_is_counted_by_its_address_then_its_24():
    assert client_networks("203.0.113.7") == ("203.0.113.7", "203.0.113.0/24")
    assert client_networks("203.0.113.250")[1] == client_networks("203.0.113.7")[1]
    assert client_networks("203.0.114.7")[1] != client_networks("203.0.113.7")[1]


def test_an_ipv6_client_is_counted_by_its_64_then_its_56_and_48():
    assert client_networks("2001:db8:1:2a3:aaaa::1") == (
        "2001:db8:1:2a3::/64",
        "2001:db8:1:200::/56",
        "2001:db8:1::/48",
    )


def test_the_64s_of_one_56_are_clients_apart_in_one_network():
    first, second = client_networks("2001:db8:1:2a3::1"), client_networks("2001:db8:1:2ff::1")
    assert first[0] != second[0]
    assert first[1:] == second[1:]


def test_two_56s_of_one_48_share_only_the_48():
    first, second = client_networks("2001:db8:1:100::1"), client_networks("2001:db8:1:200::1")
    assert first[1] != second[1]
    assert first[2] == second[2]


@pytest.mark.parametrize(
    ("address", "ipv4"),
    [
        ("64:ff9b::cb00:7107", "203.0.113.7"),
        ("64:ff9b::203.0.113.7", "203.0.113.7"),
        ("64:ff9b::c633:6407", "198.51.100.7"),
    ],
    ids=["hex", "dotted", "another IPv4"],
)
def test_a_nat64_address_is_counted_as_the_ipv4_address_it_carries(address, ipv4):
    assert client_key(address) == ipv4
    assert client_networks(address) == client_networks(ipv4)


def test_the_ipv4_users_behind_one_nat64_edge_are_clients_apart():
    before = "64:ff9b::/64"  # what every NAT64 address counted as, one bucket for all of them
    assert client_key("64:ff9b::cb00:7107") != client_key("64:ff9b::c633:6407")
    assert before not in {client_key("64:ff9b::cb00:7107"), client_key("64:ff9b::c633:6407")}


def test_an_address_outside_the_nat64_prefix_is_an_ipv6_client():
    assert client_key("64:ff9b:1::cb00:7107") == "64:ff9b:1::/64"  # the local-use prefix carries no fixed IPv4


def test_an_ipv4_mapped_address_counts_as_its_ipv4_address_and_network():
    assert client_networks("::ffff:203.0.113.7") == ("203.0.113.7", "203.0.113.0/24")


@pytest.mark.parametrize("address", [None, "", "not-an-address"])
def test_an_unparsable_address_is_counted_under_one_key_of_its_own(address):
    assert client_networks(address) == (client_key(address),)
    assert client_key(address)


def test_a_scoped_ipv6_address_is_counted_without_its_zone():
    assert client_networks("fe80::1%eth0") == client_networks("fe80::1")


@pytest.mark.parametrize("address", ["203.0.113.7%eth0", "203.0.113.7%eth0%1", "::ffff:203.0.113.7%eth0"])
def test_everything_after_the_first_percent_sign_is_a_zone_and_dropped(address):
    assert client_networks(address) == ("203.0.113.7", "203.0.113.0/24")


def test_requests_without_an_address_share_one_key_that_no_address_has():
    assert client_key(None) == client_key("") == "unknown"
    assert client_networks(None) == ("unknown",)
