"""Serializer fields of the API's own."""

import re
from typing import Any

from django.core.exceptions import ValidationError as FormValidationError
from rest_framework import serializers

# C0 (tab, line feed and carriage return included), DEL, C1, and Unicode's line and paragraph
# separators: nothing a name or a title holds on purpose.
CONTROL_CHARACTERS = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")
# The same rule as the schema states it: a pattern read alike by Python and ECMAScript.
SINGLE_LINE_PATTERN = r"^[^\u0000-\u001f\u007f-\u009f\u2028\u2029]*$"


def single_line(value: str) -> None:
    """Refuse control characters in a one-line text (a name, a title, a handle, a URL).

    A line break in a name travels into places that take one line: an email's subject or
    headers (where Django refuses it, and the email is lost), a log line, a CSV cell, a git
    header. Tab is refused too: it is never meant in a name, and it folds headers. Use it as
    ``validators=[single_line]`` on a field of another class (``RegexField``), or
    ``SingleLineCharField``.
    """
    message = _control_character_message(value)
    if message:
        raise serializers.ValidationError(message, code="control_characters")


def single_line_form(value: str) -> None:
    """``single_line`` for a Django form field (the admin's): the same rule and message,
    raised as the ``ValidationError`` a form collects."""
    message = _control_character_message(value)
    if message:
        raise FormValidationError(message, code="control_characters")


def _control_character_message(value: str) -> str | None:
    found = CONTROL_CHARACTERS.search(value)
    if found is None:
        return None
    return (
        f"Control characters (here U+{ord(found.group()):04X}) are not allowed: "
        "this field is a single line of text."
    )


class SingleLineCharField(serializers.CharField):
    """A ``CharField`` for one line of text: names, titles, handles (see ``single_line``).
    Free text (descriptions, bodies) stays a plain ``CharField``."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.validators.append(single_line)


class EmptyAsNullCharField(serializers.CharField):
    """An output text the server fills in, kept as "" in its row while absent: the API shows
    absent values as null, never "" (docs/guide/index.md), and the schema says it is nullable."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs["allow_null"] = True
        super().__init__(**kwargs)

    def to_representation(self, value: Any) -> str | None:  # type: ignore[override]  # null is the point
        return super().to_representation(value) if value else None
