from django.urls import re_path

from collab.api.routers import ID_PATTERN

from .views import ExportViewSet

_exports = rf"^workspaces/(?P<workspace_id>{ID_PATTERN})/exports"
_export = rf"{_exports}/(?P<export_id>{ID_PATTERN})"
urlpatterns = [
    re_path(
        rf"{_exports}$",
        ExportViewSet.as_view({"get": "list", "post": "create"}),
        name="workspace-exports",
    ),
    re_path(
        rf"{_export}$",
        ExportViewSet.as_view({"get": "retrieve"}),
        name="workspace-export-detail",
    ),
    re_path(
        rf"{_export}/download$",
        ExportViewSet.as_view({"get": "download"}),
        name="workspace-export-download",
    ),
]
