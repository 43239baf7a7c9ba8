"""Which client a request comes from, as rate limits and other per-client bounds count it."""

import ipaddress

IPV6_NETWORK_BITS = 64  # one IPv6 host or site usually holds a whole /64: each address is not a client


def client_key(address: str | None) -> str:
    """The key a client is counted under: its IPv4 address, or the /64 network of its IPv6 address
    (an IPv4-mapped IPv6 address counts as its IPv4 address); anything unparsable as itself."""
    try:
        parsed = ipaddress.ip_address((address or "").split("%", 1)[0])
    except ValueError:
        return address or "unknown"
    if parsed.version == 6 and parsed.ipv4_mapped is not None:
        return str(parsed.ipv4_mapped)
    if parsed.version == 6:
        return str(ipaddress.ip_network(f"{parsed}/{IPV6_NETWORK_BITS}", strict=False))
    return str(parsed)
