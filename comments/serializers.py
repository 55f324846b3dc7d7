from rest_framework import serializers

from .models import BODY_MAX_LENGTH


class CommentSerializer(serializers.Serializer):
    """A comment on an issue or on a pull request."""

    id = serializers.IntegerField()
    project_id = serializers.IntegerField()
    issue_id = serializers.IntegerField(allow_null=True, help_text="Null on a pull request.")
    pull_request_id = serializers.IntegerField(allow_null=True, help_text="Null on an issue.")
    author_id = serializers.IntegerField(
        allow_null=True, help_text="Null once the author's account is deleted."
    )
    body = serializers.CharField(help_text="Markdown, as written.")
    body_html = serializers.CharField(
        help_text="The body rendered and sanitised on the server: safe to insert as HTML."
    )
    edited = serializers.BooleanField(help_text="Whether the body was changed after posting.")
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


class CommentInputSerializer(serializers.Serializer):
    body = serializers.CharField(
        max_length=BODY_MAX_LENGTH,
        trim_whitespace=False,
        help_text=f"Markdown, at most {BODY_MAX_LENGTH:,} characters; `@handle` mentions a "
        "member who can see the issue or pull request (they are emailed once).",
    )

    def validate_body(self, value: str) -> str:
        if not value.strip():
            raise serializers.ValidationError("A comment needs some text.")
        return value


class CommentRevisionSerializer(serializers.Serializer):
    """A body a comment had before an edit replaced it."""

    id = serializers.IntegerField()
    comment_id = serializers.IntegerField()
    body = serializers.CharField(help_text="The body as it was before an edit replaced it.")
    author_id = serializers.IntegerField(allow_null=True)
    created_at = serializers.DateTimeField(help_text="When this body was written.")
    replaced_at = serializers.DateTimeField(help_text="When an edit replaced it.")
