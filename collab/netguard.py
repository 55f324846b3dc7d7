"""The private-address guard for outgoing connections (webhooks, and git remotes).

A URL given by a user must not make the service reach loopback, private, link-local or
otherwise non-public addresses (the cloud metadata endpoint, the database, an admin port).
The host is turned into addresses here (IP literals in every form a resolver or a URL parser
accepts are decoded locally, names are resolved) and every address is checked; the caller then
connects to a checked address itself (``pin``), so a name that resolves differently a moment
later (DNS rebinding) cannot slip through. ``WEBHOOK_ALLOW_PRIVATE_NETWORKS=1`` turns the
address check off (development, tests); the host's form is checked all the same.

The refusals never say what a name resolved to, nor what the resolver answered, and in the
guarded mode a name that does not resolve gets the same answer as a name resolving to a
private address: whoever may register a URL must not learn the internal DNS from the 422s.
"""

import ipaddress
import re
import socket
from ipaddress import IPv4Address, IPv4Network, IPv6Address, IPv6Network

from django.conf import settings

Address = IPv4Address | IPv6Address


class UnsafeAddress(Exception):
    """The host is, or resolves to, an address the service must not reach, or is no valid
    host at all. The message is fit to show to the user: it leaks no resolution."""


def _not_public(host: str, *, name: bool) -> str:
    if not name:
        return (
            f"The host {host!r} is not allowed: it is a loopback, private, link-local or "
            "otherwise non-public address."
        )
    # One answer for "resolves to a private address" and "does not resolve": two would tell
    # which internal names exist.
    return (
        f"The host {host!r} is not allowed: it resolves to a loopback, private, link-local or "
        "otherwise non-public address, or does not resolve."
    )


def _invalid(host: str) -> str:
    return (
        f"The host {host!r} is not allowed: give a host name (ASCII letters, digits, '-', '.'; "
        "international names in their xn-- form) or a plain IP address."
    )


def private_networks_allowed() -> bool:
    return bool(settings.WEBHOOK_ALLOW_PRIVATE_NETWORKS)


# Networks refused whatever the running Python's ``is_global`` says: its tables changed
# between versions (3.11 calls fec0::/10, 64:ff9b:1::/48 and ::a.b.c.d global).
_V4_NOT_PUBLIC = tuple(
    IPv4Network(network)
    for network in (
        "0.0.0.0/8",  # "this network"
        "10.0.0.0/8",
        "100.64.0.0/10",  # carrier-grade NAT
        "127.0.0.0/8",
        "169.254.0.0/16",  # link-local, the cloud metadata endpoint
        "172.16.0.0/12",
        "192.0.0.0/24",  # IETF protocol assignments
        "192.0.2.0/24",  # documentation
        "192.88.99.0/24",  # 6to4 relay anycast (deprecated)
        "192.168.0.0/16",
        "198.18.0.0/15",  # benchmarking
        "198.51.100.0/24",  # documentation
        "203.0.113.0/24",  # documentation
        "224.0.0.0/4",  # multicast
        "240.0.0.0/4",  # reserved, and the broadcast address
    )
)
# IPv6 is public only inside 2000::/3 (the global unicast space, from which all public
# addresses are allocated), minus these; the transition prefixes are unwrapped before.
_V6_GLOBAL_UNICAST = IPv6Network("2000::/3")
_V6_NOT_PUBLIC = tuple(
    IPv6Network(network)
    for network in (
        "2001::/23",  # IETF protocol assignments (Teredo, 2001::/32, is unwrapped first)
        "2001:db8::/32",  # documentation
        "3fff::/20",  # documentation (RFC 9637)
    )
)
# Addresses that carry an IPv4 address, reached through it by a translator or a tunnel.
_V4_COMPATIBLE = IPv6Network("::/96")  # deprecated ::a.b.c.d, and :: and ::1 themselves
_NAT64_WELL_KNOWN = IPv6Network("64:ff9b::/96")
# The local-use NAT64 prefix (RFC 8215) is refused outright rather than unwrapped: it is not
# globally reachable, and where the IPv4 address sits in it depends on the prefix length the
# operator's translator uses (RFC 6052), so no one reading of the bits is the right one.
_NAT64_LOCAL_USE = IPv6Network("64:ff9b:1::/48")
_SIX_TO_FOUR = IPv6Network("2002::/16")
_TEREDO = IPv6Network("2001::/32")


def _v4_is_public(ip: IPv4Address) -> bool:
    return ip.is_global and not any(ip in network for network in _V4_NOT_PUBLIC)


def _embedded_v4(ip: IPv6Address) -> tuple[IPv4Address, ...] | None:
    """The IPv4 addresses an IPv6 address leads to by a transition mechanism, or None when
    it carries none. A connection to such an address ends at the embedded IPv4 address, so
    that is the one to judge."""
    value = int(ip)
    if ip.ipv4_mapped is not None:
        return (ip.ipv4_mapped,)
    if ip in _NAT64_WELL_KNOWN:
        return (IPv4Address(value & 0xFFFFFFFF),)
    if ip in _SIX_TO_FOUR:
        return (IPv4Address((value >> 80) & 0xFFFFFFFF),)
    if ip in _TEREDO:
        # The Teredo server is bits 32..64; the client's address is the low 32 bits inverted.
        server = IPv4Address((value >> 64) & 0xFFFFFFFF)
        client = IPv4Address((value & 0xFFFFFFFF) ^ 0xFFFFFFFF)
        return (server, client)
    return None


def is_public(address: str) -> bool:
    """Whether a connection to ``address`` (an IP address in its standard notation) stays on
    the public internet.

    IPv6 addresses carrying an IPv4 address (mapped, NAT64, 6to4, Teredo) are judged by every
    IPv4 address they carry; ``::/96`` (the deprecated IPv4-compatible form, ``::``, ``::1``),
    the local-use NAT64 prefix, zone-scoped addresses and anything ``ipaddress`` cannot parse
    are refused.
    """
    if "%" in address:
        return False
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    if isinstance(ip, IPv4Address):
        return _v4_is_public(ip)
    if ip in _V4_COMPATIBLE or ip in _NAT64_LOCAL_USE:
        return False
    embedded = _embedded_v4(ip)
    if embedded is not None:
        return all(_v4_is_public(v4) for v4 in embedded)
    if ip.is_multicast or ip.is_unspecified or ip.is_reserved or ip.is_site_local:
        return False
    if ip not in _V6_GLOBAL_UNICAST or any(ip in network for network in _V6_NOT_PUBLIC):
        return False
    return ip.is_global


# One IPv4 label as the URL standard and inet_aton read it: decimal, 0x-hex or 0-octal.
_V4_LABEL = re.compile(r"0[xX][0-9A-Fa-f]*|0[0-7]*|[1-9][0-9]*")
_NUMERIC_LABEL = re.compile(r"[0-9]+|0[xX][0-9A-Fa-f]*")
_NAME = re.compile(r"[a-z0-9_](?:[a-z0-9_-]{0,62})(?:\.[a-z0-9_](?:[a-z0-9_-]{0,62}))*\.?")
_LOCALHOST = ("localhost", "localhost.")


def _ipv4_literal(host: str) -> IPv4Address | None:
    """The address a host written as an IPv4 literal in any form stands for (``127.1``,
    ``0x7f.0.0.1``, ``0177.0.0.1``, ``2130706433``), None when it is a name.

    As in the URL standard, a host whose last label is a number is an IPv4 literal or is
    invalid (``UnsafeAddress``): ``1.2.3.256`` must not reach a resolver or a client that may
    read it another way.
    """
    labels = host.split(".")
    if len(labels) > 1 and labels[-1] == "":
        labels.pop()
    if not _NUMERIC_LABEL.fullmatch(labels[-1]):
        return None
    if len(labels) > 4 or not all(_V4_LABEL.fullmatch(label) for label in labels):
        raise UnsafeAddress(_invalid(host))
    numbers = []
    for label in labels:
        if label[:2] in ("0x", "0X"):
            numbers.append(int(label[2:] or "0", 16))
        elif len(label) > 1 and label[0] == "0":
            numbers.append(int(label, 8))
        else:
            numbers.append(int(label))
    *leading, last = numbers
    if any(number > 255 for number in leading) or last >= 256 ** (4 - len(leading)):
        raise UnsafeAddress(_invalid(host))
    value = last
    for index, number in enumerate(leading):
        value += number << (8 * (3 - index))
    return IPv4Address(value)


def literal(host: str) -> Address | None:
    """The IP address ``host`` (as a URL parser gives it, brackets removed) is written as,
    or None when it is a name. Raises ``UnsafeAddress`` for a zone-scoped or malformed
    literal."""
    if ":" in host:
        if "%" in host:
            raise UnsafeAddress(_invalid(host))
        try:
            return IPv6Address(host)
        except ValueError:
            raise UnsafeAddress(_invalid(host)) from None
    return _ipv4_literal(host)


def resolve(host: str, port: int) -> list[str]:
    """The addresses ``host`` stands for, every one of them checked (unless allowed).

    IP literals are decoded here, without a resolver; names go to ``getaddrinfo``. Raises
    ``UnsafeAddress`` when the host is malformed, a name does not resolve, or any address is
    not public (a name with one private address among public ones is refused, since any could
    be used).
    """
    guarded = not private_networks_allowed()
    ip = literal(host)
    if ip is not None:
        addresses = [str(ip)]
    else:
        name = host.lower()
        if not _NAME.fullmatch(name) or len(name.rstrip(".")) > 253:
            raise UnsafeAddress(_invalid(host))
        if guarded and (name in _LOCALHOST or name.rstrip(".").endswith(".localhost")):
            # RFC 6761: these names are loopback whatever a resolver would say.
            raise UnsafeAddress(_not_public(host, name=True))
        addresses = _lookup(host, port, guarded=guarded)
    if guarded and not all(is_public(address) for address in addresses):
        raise UnsafeAddress(_not_public(host, name=ip is None))
    return addresses


def _lookup(host: str, port: int, *, guarded: bool) -> list[str]:
    # Never the resolver's own message: it can tell an internal name exists.
    message = _not_public(host, name=True) if guarded else f"The host {host!r} does not resolve."
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError, ValueError):
        raise UnsafeAddress(message) from None
    addresses = list(dict.fromkeys(str(info[4][0]) for info in infos))
    if not addresses:
        raise UnsafeAddress(message)
    return addresses


def pin(host: str, port: int) -> str:
    """The one checked address to connect to for ``host``: connect to it, never to the name,
    so what was checked is what is reached. Raises as ``resolve`` does."""
    return resolve(host, port)[0]
