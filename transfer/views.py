from django.http import FileResponse, Http404, HttpResponseNotModified
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.response import Response

from accounts.selectors import workspace_require
from collab.api.conditional import none_match
from collab.api.exceptions import Conflict
from collab.api.permissions import MANAGE
from collab.api.viewsets import ApiViewSet

from . import selectors, services
from .models import Export
from .serializers import ExportCreateSerializer, ExportSerializer

ADMIN_SCOPE = "projects:admin"
NOT_READY = OpenApiResponse(description="The export is not completed (details.status).")


class ExportViewSet(ApiViewSet):
    """``/v1/workspaces/:workspace_id/exports``: a workspace's archives, for its owners and
    admins (docs/operations/backups-and-moving-data.md)."""

    scope_group = "projects"
    queryset = Export.objects.none()  # for the schema; reads go through the selectors
    # Reads too: an archive holds the whole workspace, so even listing them is the admins'.
    action_scopes = {
        "list": ADMIN_SCOPE,
        "create": ADMIN_SCOPE,
        "retrieve": ADMIN_SCOPE,
        "download": ADMIN_SCOPE,
    }

    def perform_content_negotiation(self, request, force=False):
        # The archive is sent as stored, not rendered: an Accept that names its type (or any
        # other) is no reason for a 406; an error is the JSON envelope as everywhere.
        return super().perform_content_negotiation(
            request, force=force or self.action == "download"
        )

    def _workspace(self, workspace_id):
        return workspace_require(
            user=self.request.user,
            workspace_id=workspace_id,
            ability=MANAGE,
            unlimited_to="export its workspace",
        )

    def _export(self, workspace_id, export_id):
        workspace = self._workspace(workspace_id)
        export = selectors.export_get(workspace_id=workspace.pk, export_id=export_id)
        if export is None:
            raise Http404
        return export

    @extend_schema(responses={200: ExportSerializer(many=True)}, filters=False)
    def list(self, request, workspace_id=None):
        """The workspace's exports, the newest first."""
        workspace = self._workspace(workspace_id)
        return self.paginated(selectors.export_list(workspace_id=workspace.pk), ExportSerializer)

    @extend_schema(
        request=ExportCreateSerializer,
        responses={
            202: ExportSerializer,
            409: OpenApiResponse(
                description="An export of this workspace is already pending or running "
                "(details.export_id)."
            ),
        },
    )
    def create(self, request, workspace_id=None):
        """Ask for an archive of the whole workspace: answered at once (202) with the export
        `pending`; a worker builds it, then it is `completed` (or `failed`), and the events
        `export.completed` or `export.failed` say so."""
        workspace = self._workspace(workspace_id)
        data = self.validated(ExportCreateSerializer)
        export = services.export_request(
            workspace=workspace, actor=request.user, include_events=data["include_events"]
        )
        location = f"/v1/workspaces/{workspace.pk}/exports/{export.pk}"
        return Response(ExportSerializer(export).data, status=202, headers={"Location": location})

    @extend_schema(responses={200: ExportSerializer})
    def retrieve(self, request, workspace_id=None, export_id=None):
        """One export: its status and, once completed, its size, digest and expiry."""
        return self.ok(ExportSerializer(self._export(workspace_id, export_id)).data)

    @extend_schema(
        responses={
            (200, "application/gzip"): OpenApiResponse(
                OpenApiTypes.BINARY,
                description="The archive (a gzip-compressed tar; `application/zstd` or "
                "`application/x-tar` when the server writes those), streamed.",
            ),
            409: NOT_READY,
        },
        filters=False,
    )
    def download(self, request, workspace_id=None, export_id=None):
        """The completed export's archive, streamed from the exports storage."""
        export = self._export(workspace_id, export_id)
        if export.status != Export.Status.COMPLETED:
            raise Conflict(
                f"Export {export.pk} is {export.status}: only a completed export can be "
                "downloaded.",
                details={"status": export.status},
            )
        etag = f'"{export.sha256}"' if export.sha256 else None
        header = request.META.get("HTTP_IF_NONE_MATCH")
        if etag and header and none_match(header, etag):
            # Checked before the archive is opened: a client that has it fetches nothing.
            not_modified = HttpResponseNotModified()
            not_modified["ETag"] = etag
            return not_modified
        try:
            archive = services.export_open(export=export)
        except FileNotFoundError:
            # Purged between the read above and now, or removed from the store by hand.
            raise Http404 from None
        suffix = (export.file_name or "").rsplit("/", 1)[-1].split(".", 1)[-1]
        response = FileResponse(
            archive,
            as_attachment=True,
            filename=f"collab-workspace-{export.workspace_id}-export-{export.pk}.{suffix}",
            content_type=export.content_type or "application/octet-stream",
        )
        if export.size is not None:
            response["Content-Length"] = str(export.size)
        if etag:
            response["ETag"] = etag
        return response
