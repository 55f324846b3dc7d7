from collections.abc import Sequence
from functools import partial

from drf_spectacular.utils import extend_schema

from accounts.models import User
from collab.api.exceptions import BadRequest
from collab.api.permissions import has_scope, require_scope
from collab.api.routers import id_or_none
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
        # Invalid ids narrow nothing here: the filters answer them 400.
        projects = selectors.search_projects(
            user=request.user,
            project_id=id_or_none(request.query_params.get("project_id")),
            workspace_id=id_or_none(request.query_params.get("workspace_id")),
        )
        hits = selectors.search_hits(user=request.user, scopes=scopes, projects=projects)
        hits = self.filter_queryset(hits)
        self.page_counter = partial(
            self._count, user=request.user, text=text, scopes=scopes, projects=projects
        )
        page = self.paginate_queryset(selectors.hit_values(hits, text=text)) or []
        page = selectors.hit_snippets_attach(page, text=text)
        return self.get_paginated_response([selectors.search_hit_record(row) for row in page])

    def _count(
        self, rows, *, user: User, text: str, scopes: Sequence[str], projects: Sequence[int] | None
    ) -> int:
        """The exact total (the filters are valid by now: the filter set checked them)."""
        types = [kind for kind in self.request.query_params.get("type", "").split(",") if kind]
        return selectors.hit_total(
            rows, user=user, text=text, scopes=scopes, projects=projects, types=types or None
        )
