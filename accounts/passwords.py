"""A password validator of our own, beside Django's (``AUTH_PASSWORD_VALIDATORS``)."""

from django.core.exceptions import ValidationError


class NotBlankValidator:
    """Refuse a password of whitespace alone: eight spaces pass every stock validator (long
    enough, not common, not numeric, like no attribute) and are one guess."""

    def validate(self, password: str, user=None) -> None:
        if not password.strip():
            raise ValidationError(
                "This password is blank: it holds only spaces or other whitespace.",
                code="password_blank",
            )

    def get_help_text(self) -> str:
        return "Your password can't be only whitespace."
