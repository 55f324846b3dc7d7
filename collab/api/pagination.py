"""``page``/``per_page`` pagination carrying both meta shapes of the contract and a Link header."""

import math
from urllib.parse import parse_qs, urlencode, urlsplit, urlunsplit

from rest_framework.pagination import BasePagination
from rest_framework.response import Response

from .exceptions import BadRequest
from .renderers import Envelope
from .routers import MAX_ID

DEFAULT_PER_PAGE = 20
MAX_PER_PAGE = 100


def positive_int_param(request, name: str, default: int) -> int:
    """The query parameter ``name`` as an integer from 1; absent gives ``default``, and
    anything else (``abc``, ``0``, ``1.0``, an empty value) answers 400."""
    raw = request.query_params.get(name)
    if raw is None:
        return default
    # At most 19 digits: past that the value is out of range anyway, and int() of thousands
    # of digits raises.
    value = int(raw) if raw.isascii() and raw.isdigit() and len(raw) <= 19 else 0
    if not 1 <= value <= MAX_ID:
        raise BadRequest(
            f"'{name}' must be a positive integer.",
            details={name: [f"Expected an integer from 1 to {MAX_ID}, got '{raw}'."]},
        )
    return value


class PagePagination(BasePagination):
    """Page numbers from 1; ``per_page`` defaults to 20 and is clamped to 100.

    A page past the last answers an empty list, not an error. The total comes from
    ``view.page_counter`` when the view set one: a cheaper exact source than ``COUNT(*)``.
    """

    def paginate_queryset(self, queryset, request, view=None):
        self.request = request
        self.page = positive_int_param(request, "page", 1)
        self.per_page = min(positive_int_param(request, "per_page", DEFAULT_PER_PAGE), MAX_PER_PAGE)
        counter = getattr(view, "page_counter", None)
        self.total = counter(queryset) if counter else _count(queryset)
        offset = (self.page - 1) * self.per_page
        if offset >= self.total:
            return []
        return list(queryset[offset : offset + self.per_page])

    @property
    def total_pages(self) -> int:
        return max(1, math.ceil(self.total / self.per_page))

    def get_paginated_response(self, data):
        meta = {
            "total": self.total,
            "page": self.page,
            "per_page": self.per_page,
            "current_page": self.page,
            "total_pages": self.total_pages,
            "total_count": self.total,
        }
        response = Response(Envelope(success=True, data=data, meta=meta))
        response["Link"] = self._link_header()
        return response

    def _link_header(self) -> str:
        # The URL is parsed once for all four links (as DRF's replace_query_param would each
        # time: same encoding, parameters in sorted order).
        scheme, netloc, path, query, fragment = urlsplit(self.request.build_absolute_uri())
        params = parse_qs(query, keep_blank_values=True)
        params["per_page"] = [str(self.per_page)]
        links = [("first", 1)]
        if self.page > 1:
            links.append(("prev", min(self.page - 1, self.total_pages)))
        if self.page < self.total_pages:
            links.append(("next", self.page + 1))
        links.append(("last", self.total_pages))
        parts = []
        for rel, number in links:
            params["page"] = [str(number)]
            query = urlencode(sorted(params.items()), doseq=True)
            parts.append(f'<{urlunsplit((scheme, netloc, path, query, fragment))}>; rel="{rel}"')
        return ", ".join(parts)

    def get_paginated_response_schema(self, schema):
        # Imported here: the schema module imports DRF's generics, which import this class.
        from .schema import paginated_envelope

        return paginated_envelope(schema)

    def get_schema_operation_parameters(self, view):
        return [
            {
                "name": "page",
                "in": "query",
                "required": False,
                "description": "Page number, from 1.",
                "schema": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": MAX_ID,
                    "default": 1,
                },
            },
            {
                "name": "per_page",
                "in": "query",
                "required": False,
                "description": f"Page size, {DEFAULT_PER_PAGE} by default; larger values are "
                f"clamped to {MAX_PER_PAGE}.",
                "schema": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": MAX_ID,
                    "default": DEFAULT_PER_PAGE,
                },
            },
        ]


def _count(queryset) -> int:
    try:
        return queryset.count()
    except (AttributeError, TypeError):
        return len(queryset)
