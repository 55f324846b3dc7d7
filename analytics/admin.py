from django.contrib import admin
from django.template.response import TemplateResponse
from django.utils import timezone
from django.utils.html import format_html

from collab.api.exceptions import BadRequest

from . import selectors
from .charts import bar_chart, line_chart
from .models import ProjectDashboard
from .periods import period_parse

ADMIN_PERIODS = ("7d", "30d", "90d", "1y", "all")


@admin.register(ProjectDashboard)
class ProjectDashboardAdmin(admin.ModelAdmin):
    """One page per project: the daily series as charts, the metrics and the breakdowns."""

    list_display = ("name", "workspace", "status", "dashboard_link")
    list_select_related = ("workspace",)
    search_fields = ("name", "workspace__name")
    ordering = ("workspace__name", "name")

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    @admin.display(description="Dashboard")
    def dashboard_link(self, project):
        return format_html('<a href="{}/change/">Open</a>', project.pk)

    def change_view(self, request, object_id, form_url="", extra_context=None):
        project = self.get_object(request, object_id)
        if project is None:
            return self._get_obj_does_not_exist_redirect(request, self.opts, object_id)
        if not self.has_view_permission(request, project):
            return super().change_view(request, object_id, form_url, extra_context)
        chosen = request.GET.get("period", "30d")
        try:
            period = period_parse(chosen if chosen in ADMIN_PERIODS else "30d", now=timezone.now())
        except BadRequest:  # pragma: no cover - the choices above all parse
            period = period_parse("30d", now=timezone.now())
        metrics = selectors.metrics(projects=[project], period=period)
        dashboard = selectors.dashboard(projects=[project], period=period)
        series = dashboard["series"]
        labels = [point["date"] for point in series]

        def column(name):
            return [point[name] for point in series]

        charts = [
            line_chart(
                "Issues opened and closed per day",
                labels,
                {"opened": column("issues_opened"), "closed": column("issues_closed")},
            ),
            line_chart(
                "Open issues at the end of each day", labels, {"open": column("open_issues")}
            ),
            bar_chart(
                "Commits and merged pull requests per day",
                labels,
                {"commits": column("commits"), "merged": column("pull_requests_merged")},
            ),
            bar_chart("Comments per day", labels, {"comments": column("comments")}),
        ]
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "title": f"Dashboard: {project.name}",
            "project": project,
            "period": period.name,
            "periods": ADMIN_PERIODS,
            "metrics": metrics,
            "charts": charts,
            "breakdowns": dashboard["breakdowns"],
            "breakdowns_as_of": dashboard["breakdowns_as_of"],
            **(extra_context or {}),
        }
        return TemplateResponse(request, "admin/analytics/project_dashboard.html", context)
