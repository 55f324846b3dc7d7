from rest_framework import serializers

from collab.api.fields import SingleLineCharField, single_line

from .models import PullRequest, Repository, Review

MERGE_METHODS = ("merge", "squash", "fast_forward")
# What git may be given, as the schema states it: no control characters, not an option
# ("-..."). Whether it is a form git fetches from, and one this server may reach (its address,
# local paths), is checked when the repository is added, each with its own message.
CLONE_URL_PATTERN = r"^[^\x00-\x20-][^\x00-\x1f]*$"


class RepositorySerializer(serializers.Serializer):
    id = serializers.IntegerField()
    project_id = serializers.IntegerField()
    name = serializers.CharField()
    clone_url = serializers.CharField(help_text="Any password or token in it shows as ***.")
    default_branch = serializers.CharField(allow_null=True, help_text="Null until synced.")
    sync_status = serializers.ChoiceField(choices=Repository.SyncStatus.choices)
    sync_error = serializers.CharField(
        allow_null=True, help_text="Why the last sync failed; null when it did not."
    )
    last_synced_at = serializers.DateTimeField(allow_null=True)
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


class RepositoryCreatedSerializer(RepositorySerializer):
    webhook_secret = serializers.CharField(
        help_text="Signs push notifications (X-Hub-Signature-256). Shown this once only."
    )
    push_url = serializers.CharField(help_text="Where a post-receive hook or webhook posts.")


class RepositoryInputSerializer(serializers.Serializer):
    name = serializers.RegexField(
        r"^[A-Za-z0-9._-]+$",
        max_length=100,
        validators=[single_line],
        error_messages={"invalid": "Letters, digits, '.', '_' and '-' only."},
    )
    clone_url = serializers.RegexField(
        CLONE_URL_PATTERN,
        max_length=2000,
        validators=[single_line],
        help_text="An https://, ssh:// or git:// URL, `user@host:path`, or (where the server "
        "allows local repositories) an absolute path or file:// URL.",
        error_messages={"invalid": "Enter a URL git can fetch."},
    )


class BranchSerializer(serializers.Serializer):
    name = serializers.CharField()
    commit_sha = serializers.CharField()
    is_default = serializers.BooleanField()


class CommitSerializer(serializers.Serializer):
    sha = serializers.CharField()
    repository_id = serializers.IntegerField()
    author_name = serializers.CharField(allow_blank=True)
    author_email = serializers.CharField(allow_blank=True)
    message = serializers.CharField(allow_blank=True)
    authored_at = serializers.DateTimeField()
    committed_at = serializers.DateTimeField()


class PullRequestSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    repository_id = serializers.IntegerField()
    number = serializers.IntegerField()
    title = serializers.CharField()
    description = serializers.CharField(allow_blank=True)
    head = serializers.CharField()
    base = serializers.CharField()
    state = serializers.ChoiceField(choices=PullRequest.State.choices)
    author_id = serializers.IntegerField(allow_null=True)
    head_sha = serializers.CharField(allow_null=True)
    base_sha = serializers.CharField(allow_null=True)
    merge_commit_sha = serializers.CharField(allow_null=True, help_text="Null until merged.")
    merge_method = serializers.CharField(allow_null=True, help_text="Null until merged.")
    merged_by_id = serializers.IntegerField(allow_null=True)
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()
    merged_at = serializers.DateTimeField(allow_null=True)
    closed_at = serializers.DateTimeField(allow_null=True)
    comment_count = serializers.IntegerField(min_value=0)


class PullRequestInputSerializer(serializers.Serializer):
    title = SingleLineCharField(max_length=500)
    head = SingleLineCharField(max_length=255)
    base = SingleLineCharField(max_length=255)
    description = serializers.CharField(required=False, allow_blank=True, default="")


class PullRequestUpdateSerializer(serializers.Serializer):
    title = SingleLineCharField(max_length=500, required=False)
    description = serializers.CharField(required=False, allow_blank=True)
    state = serializers.ChoiceField(
        choices=["open", "closed"],
        required=False,
        help_text="closed closes the pull request, open reopens it.",
    )


class MergeInputSerializer(serializers.Serializer):
    method = serializers.ChoiceField(choices=MERGE_METHODS, default="merge")


class ReviewSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    pull_request_id = serializers.IntegerField()
    author_id = serializers.IntegerField(allow_null=True)
    state = serializers.ChoiceField(choices=Review.State.choices)
    body = serializers.CharField(allow_blank=True)
    created_at = serializers.DateTimeField()


class ReviewInputSerializer(serializers.Serializer):
    state = serializers.ChoiceField(choices=Review.State.choices)
    body = serializers.CharField(required=False, allow_blank=True, default="", max_length=65536)


class PushAcceptedSerializer(serializers.Serializer):
    queued = serializers.BooleanField()
