"""Output shapes, for the schema: the bodies are built as plain dicts by the selectors."""

from rest_framework import serializers

from .periods import PERIOD_PATTERN


class PeriodQuerySerializer(serializers.Serializer):
    period = serializers.RegexField(
        PERIOD_PATTERN,
        required=False,
        help_text="A number and a unit `h`, `d`, `w`, `m` (months) or `y` (`30d`, `12w`), or "
        "`all`. Default `30d`. Hours cover whole UTC hours ending with the current one; days, "
        "weeks, months and years whole UTC days ending today.",
    )


class IssueMetricsSerializer(serializers.Serializer):
    total = serializers.IntegerField(
        help_text="`open` + `closed`: the issues open at some moment of the period."
    )
    open = serializers.IntegerField(help_text="Issues open or in progress at `to`.")
    closed = serializers.IntegerField(
        help_text="Issues closed during the period and still closed at `to`."
    )
    opened = serializers.IntegerField(help_text="Issues created during the period.")
    reopened = serializers.IntegerField(help_text="Reopenings during the period.")
    closings = serializers.IntegerField(
        help_text="Changes to closed during the period (an issue closed twice counts twice)."
    )
    average_resolution_time = serializers.CharField(allow_null=True)
    average_resolution_seconds = serializers.IntegerField(allow_null=True)


class CommitMetricsSerializer(serializers.Serializer):
    total = serializers.IntegerField()
    this_month = serializers.IntegerField()


class PullRequestMetricsSerializer(serializers.Serializer):
    opened = serializers.IntegerField()
    merged = serializers.IntegerField()
    average_review_time = serializers.CharField(allow_null=True)
    average_review_seconds = serializers.IntegerField(allow_null=True)


class PeriodFieldsMixin(serializers.Serializer):
    period = serializers.CharField()
    # "from" is a keyword: declared through the fields mapping below.

    def get_fields(self):
        fields = super().get_fields()
        fields["from"] = serializers.DateTimeField()
        fields["to"] = serializers.DateTimeField()
        return fields


class MetricsSerializer(PeriodFieldsMixin):
    issues = IssueMetricsSerializer()
    commits = CommitMetricsSerializer()
    pull_requests = PullRequestMetricsSerializer()


class DayPointSerializer(serializers.Serializer):
    date = serializers.DateField()
    issues_opened = serializers.IntegerField()
    issues_closed = serializers.IntegerField()
    issues_reopened = serializers.IntegerField()
    open_issues = serializers.IntegerField(help_text="Issues open or in progress at day's end.")
    commits = serializers.IntegerField()
    pull_requests_opened = serializers.IntegerField()
    pull_requests_merged = serializers.IntegerField()
    comments = serializers.IntegerField(
        help_text="Comments written that day on issues and pull requests, less those deleted "
        "since (days already rolled up see a deletion at the next full rollup, nightly)."
    )


class BreakdownEntrySerializer(serializers.Serializer):
    key = serializers.CharField(allow_null=True)
    label = serializers.CharField()  # type: ignore[assignment]  # the entry's field
    open = serializers.IntegerField()
    closed = serializers.IntegerField()
    total = serializers.IntegerField()


class BreakdownsSerializer(serializers.Serializer):
    # Named for the breakdowns, shadowing nothing a serializer reads ("label", "type"...).
    status = BreakdownEntrySerializer(many=True)
    type = BreakdownEntrySerializer(many=True)
    priority = BreakdownEntrySerializer(many=True)
    assignee = BreakdownEntrySerializer(many=True)
    label = BreakdownEntrySerializer(many=True)  # type: ignore[assignment]  # by label


class DashboardSerializer(PeriodFieldsMixin):
    series = DayPointSerializer(many=True)
    breakdowns = BreakdownsSerializer()
    breakdowns_as_of = serializers.DateTimeField()


class WorkspaceDashboardSerializer(DashboardSerializer):
    project_ids = serializers.ListField(child=serializers.IntegerField())
