from rest_framework import serializers

from .models import HitType


class SearchHitSerializer(serializers.Serializer):
    """One thing found: an issue, a pull request or a comment."""

    type = serializers.ChoiceField(choices=HitType.choices)
    id = serializers.IntegerField(help_text="The issue's, pull request's or comment's id.")
    project_id = serializers.IntegerField()
    title = serializers.CharField(
        help_text="The issue's or pull request's title; a comment's is its parent's."
    )
    snippet = serializers.CharField(
        help_text="The best passage of the description or comment as HTML, escaped, with the "
        "matched words in `<mark>` (its start when only the title matched)."
    )
    score = serializers.FloatField(
        help_text="How well it matches, from 0 to 1: a title's words weigh more than a body's."
    )
    issue_id = serializers.IntegerField(
        allow_null=True, help_text="The issue: the hit itself, or a comment's parent."
    )
    pull_request_id = serializers.IntegerField(
        allow_null=True, help_text="The pull request: the hit itself, or a comment's parent."
    )
