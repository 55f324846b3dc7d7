"""The service's routes, plus the bare baseline the issue list is measured against."""

from django.urls import include, path

from bench.views import bare_issue_list

urlpatterns = [
    path("bench/bare/projects/<int:project_id>/issues", bare_issue_list),
    path("", include("collab.urls")),
]

handler404 = "collab.views.not_found"
handler500 = "collab.views.server_error"
