"""The bare baseline: what a plain Django view costs for the same issue list.

The same filter (project and status), the same exact ``COUNT(*)``, the same order, and the
same rows with ``.values()`` (their label names in one more query, as the API shows them),
straight to JSON with Django's own encoder. No authentication, permissions, filter forms or
envelope machinery: the floor the API's list is compared with.
"""

from collections import defaultdict

from django.http import JsonResponse

from issues.models import Issue
from issues.records import ISSUE_FIELDS


def bare_issue_list(request, project_id: int):
    page = int(request.GET.get("page", 1))
    per_page = min(int(request.GET.get("per_page", 20)), 100)
    statuses = request.GET.get("status", "open").split(",")
    issues = Issue.objects.filter(project_id=project_id, status__in=statuses)
    total = issues.count()
    offset = (page - 1) * per_page
    rows = list(
        issues.order_by("-created_at", "-id").values(*ISSUE_FIELDS)[offset : offset + per_page]
    )
    names = defaultdict(list)
    pairs = (
        Issue.labels.through.objects.filter(issue_id__in=[row["id"] for row in rows])
        .order_by("label__name")
        .values_list("issue_id", "label__name")
    )
    for issue_id, name in pairs:
        names[issue_id].append(name)
    for row in rows:
        row["labels"] = names[row["id"]]
    return JsonResponse(
        {
            "success": True,
            "data": rows,
            "meta": {"total": total, "page": page, "per_page": per_page},
        }
    )
