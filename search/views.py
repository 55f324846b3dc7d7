from collections.abc import Sequence
from functools import partial

from drf_spectacular.utils import extend_schema

from accounts.models import User
from collab.api.exceptions import BadRequest
from collab.api.permissions import has_scope, require_scope
from collab.api.viewsets import ApiViewSet

from . import selectors
from .filters import SearchFilter
from .models import SearchHit
from .serializers import SearchHitSerializer


class SearchViewSet(ApiViewSet):
    """``/v1/search``: issues, pull requests and comments, across every visible project."""

    queryset = SearchHit.objects.none()
    filterset_class = SearchFilter

    def readable_scopes(self) -> list[str]:
        """The read scopes of the credential among those hits need; 403 if none."""
        scopes = [scope for scope in selectors.READ_SCOPES if has_scope(self.request, scope)]
        if not scopes:
            require_scope(self.request, "issues:read")
        return scopes

    @extend_schema(responses={200: SearchHitSerializer(many=True)})
    def list(self, request):
        """Ranked, best match first: every term must match the title or the text. A key sees
        the kinds its scopes read (`issues:read`: issues and their comments;
        `projects:read`: pull requests and theirs)."""
        scopes = self.readable_scopes()
        text = request.query_params.get("q", "")
        if not text.strip():
            message = "Say what to search for."
            raise BadRequest("'q' is required.", details={"q": [message]})
        hits = self.filter_queryset(selectors.search_hits(user=request.user, scopes=scopes))
        self.page_counter = partial(self._count, user=request.user, text=text, scopes=scopes)
        page = self.paginate_queryset(selectors.hit_values(hits, text=text)) or []
        page = selectors.hit_snippets_attach(page, text=text)
        return self.get_paginated_response([selectors.search_hit_record(row) for row in page])

    def _count(self, rows, *, user: User, text: str, scopes: Sequence[str]) -> int:
        """The exact total (the filters are valid by now: the filter set checked them)."""
        params = self.request.query_params
        project_id, workspace_id = params.get("project_id"), params.get("workspace_id")
        types = [kind for kind in params.get("type", "").split(",") if kind]
        return selectors.hit_total(
            rows,
            user=user,
            text=text,
            scopes=scopes,
            project_id=int(project_id) if project_id else None,
            workspace_id=int(workspace_id) if workspace_id else None,
            types=types or None,
        )
