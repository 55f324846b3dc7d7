from rest_framework.routers import SimpleRouter

# An identifier in a path: a positive 64-bit integer has at most 19 digits. Longer strings of
# digits match no route (a JSON 404), so no view ever converts thousands of digits to an int.
ID_PATTERN = r"[0-9]{1,19}"
# Identifiers are positive 64-bit integers: a larger number is no id, and a database refuses
# to compare a column with it (an overflow, once a 500). Integer query parameters share the
# range (the JSON renderer refuses anything larger, so a bigger page number could not be
# echoed).
MAX_ID = 2**63 - 1


def id_or_none(value: object) -> int | None:
    """``value`` (a path's text, or an int) as an identifier; None when it cannot be one."""
    try:
        pk = int(value)  # type: ignore[call-overload]  # None and the like: the TypeError
    except (TypeError, ValueError):
        return None
    return pk if 0 < pk <= MAX_ID else None


class ApiRouter(SimpleRouter):
    """Paths without trailing slashes and numeric ids, as the contract writes them."""

    def __init__(self):
        super().__init__(trailing_slash=False)

    def get_lookup_regex(self, viewset, lookup_prefix=""):
        return rf"(?P<{lookup_prefix}pk>{ID_PATTERN})"
