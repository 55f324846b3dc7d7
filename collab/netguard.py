"""The private-address guard for outgoing requests (webhooks, and git remotes).

A URL given by a user must not make the service reach loopback, private, link-local or
otherwise non-public addresses (the cloud metadata endpoint, the database, an admin port).
Names are resolved here and every address checked; the caller then connects to one of the
checked addresses itself, so a name that resolves differently a moment later (DNS rebinding)
cannot slip through. ``WEBHOOK_ALLOW_PRIVATE_NETWORKS=1`` turns the guard off.
"""

import ipaddress
import socket

from django.conf import settings


class UnsafeAddress(Exception):
    """The URL's host is, or resolves to, an address the service must not reach."""


def private_networks_allowed() -> bool:
    return bool(settings.WEBHOOK_ALLOW_PRIVATE_NETWORKS)


def is_public(address: str) -> bool:
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_global and not ip.is_multicast


def resolve(host: str, port: int) -> list[str]:
    """The addresses ``host`` resolves to, every one of them checked (unless allowed).

    Raises ``UnsafeAddress`` when the name does not resolve or any address is not public: a
    name with one private address among public ones is refused, since any could be used.
    """
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise UnsafeAddress(f"The host {host!r} does not resolve ({exc}).") from None
    addresses = list(dict.fromkeys(info[4][0] for info in infos))
    if not addresses:
        raise UnsafeAddress(f"The host {host!r} does not resolve.")
    if not private_networks_allowed():
        for address in addresses:
            if not is_public(address):
                raise UnsafeAddress(
                    f"The host {host!r} resolves to {address}, a loopback, private, link-local "
                    "or otherwise non-public address."
                )
    return addresses
