"""API key format: ``clb_`` + 30 random base62 characters + a 6-character CRC32 checksum.
An OAuth app's tokens have the same form with a prefix of their own (``cla_`` for an access
token, ``clr_`` for a refresh token), so that a scanner tells what it found.

The checksum lets secret scanners (and this service, before touching the database) tell a
real key from a typo or a random string. Only the SHA-256 of a key is stored: keys carry
180 bits of entropy, so a fast hash is enough and keeps authentication to one indexed lookup.
"""

import hashlib
import secrets
import string
import zlib

KEY_PREFIX = "clb_"
ALPHABET = string.digits + string.ascii_letters
RANDOM_LENGTH = 30
CHECKSUM_LENGTH = 6
KEY_LENGTH = len(KEY_PREFIX) + RANDOM_LENGTH + CHECKSUM_LENGTH
DISPLAY_PREFIX_LENGTH = len(KEY_PREFIX) + 8


def _base62(number: int, width: int) -> str:
    digits = []
    for _ in range(width):
        number, remainder = divmod(number, 62)
        digits.append(ALPHABET[remainder])
    return "".join(reversed(digits))


def _checksum(body: str) -> str:
    return _base62(zlib.crc32(body.encode()), CHECKSUM_LENGTH)


def generate_key(prefix: str = KEY_PREFIX) -> str:
    body = "".join(secrets.choice(ALPHABET) for _ in range(RANDOM_LENGTH))
    return f"{prefix}{body}{_checksum(body)}"


def looks_like_key(value: str) -> bool:
    return value.startswith(KEY_PREFIX)


def is_well_formed(key: str, prefix: str = KEY_PREFIX) -> bool:
    if len(key) != len(prefix) + RANDOM_LENGTH + CHECKSUM_LENGTH or not key.startswith(prefix):
        return False
    body = key[len(prefix) : -CHECKSUM_LENGTH]
    if any(char not in ALPHABET for char in body):
        return False
    return secrets.compare_digest(_checksum(body), key[-CHECKSUM_LENGTH:])


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def display_prefix(key: str) -> str:
    return key[:DISPLAY_PREFIX_LENGTH]
