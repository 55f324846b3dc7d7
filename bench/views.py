"""The bare baselines: what plain Django views cost for the same work as the API.

The list: the same filter (project and status), the same exact ``COUNT(*)``, the same order,
and the same rows with ``.values()`` (their label names in one more query, as the API shows
them), straight to JSON with Django's own encoder.

The writes: a create's essential writes in one transaction (the project's workspace read, the
label ids, the next number, the issue row, its label links, its history row and its event row)
and an update's (the issue read and locked, its row changed, its history row, its event row).

No authentication, permissions, validation, idempotency or envelope machinery: the floors the
API's requests are compared with.
"""

import json
from collections import defaultdict

from django.db import transaction
from django.http import JsonResponse
from django.utils import timezone
from django.views.decorators.csrf import csrf_exempt

from collab.db.sequences import sequence_next
from events.models import Event
from issues.models import PRIORITY_RANK, Issue, IssueHistory, IssueSequence, Label
from issues.records import ISSUE_FIELDS
from projects.models import Project


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


def _row(issue: Issue, labels: list[str]) -> dict:
    row = {field: getattr(issue, field) for field in ISSUE_FIELDS}
    for field in ("created_at", "updated_at", "closed_at"):
        row[field] = row[field] and row[field].isoformat()
    return {**row, "labels": labels}


@csrf_exempt
def bare_issue_create(request, project_id: int):
    fields = json.loads(request.body)
    names = sorted(fields.get("labels", []))
    with transaction.atomic():
        workspace_id = Project.objects.values_list("workspace_id", flat=True).get(pk=project_id)
        label_ids = list(
            Label.objects.filter(project_id=project_id, name__in=names).values_list("id", flat=True)
        )
        now = timezone.now()
        issue = Issue(
            project_id=project_id,
            title=fields["title"],
            priority_rank=PRIORITY_RANK["medium"],
            created_at=now,
            updated_at=now,
        )
        issue.number = sequence_next(IssueSequence, parent_field="project", parent_id=project_id)
        issue.save(force_insert=True)
        Issue.labels.through.objects.bulk_create(
            Issue.labels.through(issue_id=issue.pk, label_id=label_id) for label_id in label_ids
        )
        row = _row(issue, names)
        IssueHistory.objects.create(issue=issue, field="created", new_value=row, created_at=now)
        Event.objects.create(
            type="issue.created", workspace_id=workspace_id, project_id=project_id, data=row
        )
    return JsonResponse({"success": True, "data": row}, status=201)


@csrf_exempt
def bare_issue_patch(request, issue_id: int):
    fields = json.loads(request.body)
    with transaction.atomic():
        issue = Issue.objects.select_for_update().select_related("project").get(pk=issue_id)
        before = issue.priority
        issue.priority = fields["priority"]
        issue.priority_rank = PRIORITY_RANK[issue.priority]
        issue.updated_at = timezone.now()
        issue.save(update_fields=["priority", "priority_rank", "updated_at"])
        row = _row(issue, [])
        IssueHistory.objects.create(
            issue=issue,
            field="priority",
            old_value=before,
            new_value=issue.priority,
            created_at=issue.updated_at,
        )
        Event.objects.create(
            type="issue.updated",
            workspace_id=issue.project.workspace_id,
            project_id=issue.project_id,
            data=row,
            changes={"priority": {"previous": before, "current": issue.priority}},
        )
    return JsonResponse({"success": True, "data": row})
