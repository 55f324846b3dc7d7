"""The service's routes, plus the bare baselines the API is measured against."""

from django.urls import include, path

from bench.views import bare_issue_create, bare_issue_list, bare_issue_patch

urlpatterns = [
    path("bench/bare/projects/<int:project_id>/issues", bare_issue_list),
    path("bench/bare/projects/<int:project_id>/issues/create", bare_issue_create),
    path("bench/bare/issues/<int:issue_id>", bare_issue_patch),
    path("", include("collab.urls")),
]

handler404 = "collab.views.not_found"
handler500 = "collab.views.server_error"
