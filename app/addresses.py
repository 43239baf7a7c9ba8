"""Which client a request comes from, as rate limits and other per-client bounds count it: by address
and by the networks around it."""

import ipaddress

IPV6_NETWORK_BITS = 64  # one IPv6 host or site usually holds a whole /64: each address is not a client
IPV6_SITE_BITS = 48  # one site, or 256 households of /56 each
# The wider networks a client is also counted in, narrow to wide: an IPv4 /24; an IPv6 /56 (what many
# providers give one household) and its /48.
IPV4_NETWORKS = (24,)
IPV6_NETWORKS = (56, IPV6_SITE_BITS)
NAT64 = ipaddress.ip_network("64:ff9b::/96")  # RFC 6052: the last 32 bits are the IPv4 address behind it
NETWORK_SCOPE = "network"  # the rate limiter's scope of a limit counted per network, not per client


def client_key(address: str | None) -> str:
    """The key a client is counted under: its IPv4 address, or the /64 network of its IPv6 address
    (an IPv4-mapped or NAT64 IPv6 address counts as its IPv4 address); anything unparsable as itself."""
    return client_networks(address)[0]


def client_networks(address: str | None) -> tuple[str, ...]:
    """Every key a client is counted under, narrow to wide: `client_key`, then its IPv4 /24, or its
    IPv6 /56 and /48; an unparsable address has its own key only."""
    parsed = _parsed(address)
    if parsed is None:
        return (address or "unknown",)
    if parsed.version == 4:
        return (str(parsed), *(_network(parsed, bits) for bits in IPV4_NETWORKS))
    return tuple(_network(parsed, bits) for bits in (IPV6_NETWORK_BITS, *IPV6_NETWORKS))


def _parsed(address: str | None) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """The address, an IPv4 one when an IPv6 address only carries one (mapped, or NAT64); None if unparsable."""
    try:
        parsed = ipaddress.ip_address((address or "").split("%", 1)[0])
    except ValueError:
        return None
    if parsed.version == 6 and parsed.ipv4_mapped is not None:
        return parsed.ipv4_mapped
    if parsed.version == 6 and parsed in NAT64:
        return ipaddress.IPv4Address(int(parsed) & 0xFFFFFFFF)
    return parsed


def _network(address, bits: int) -> str:
    return str(ipaddress.ip_network(f"{address}/{bits}", strict=False))
