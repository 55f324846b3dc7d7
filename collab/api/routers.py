from rest_framework.routers import SimpleRouter


class ApiRouter(SimpleRouter):
    """Paths without trailing slashes and numeric ids, as the contract writes them."""

    def __init__(self):
        super().__init__(trailing_slash=False)

    def get_lookup_regex(self, viewset, lookup_prefix=""):
        return rf"(?P<{lookup_prefix}pk>\d+)"
