from typing import Any

from django.conf import settings
from django.contrib.auth.base_user import AbstractBaseUser, BaseUserManager
from django.contrib.auth.models import PermissionsMixin
from django.core.validators import RegexValidator
from django.db import IntegrityError, models, transaction
from django.db.models import Q
from django.utils import timezone

from .handles import HANDLE_MAX_LENGTH, HANDLE_PATTERN, HANDLE_RULE, handle_candidates


class UserManager(BaseUserManager["User"]):
    use_in_migrations = True

    def create_user(self, email: str, password: str | None = None, **fields: Any) -> "User":
        if not email:
            raise ValueError("An email address is required.")
        user = self.model(email=self.normalize_email(email).lower(), **fields)
        if password:
            user.set_password(password)
        else:
            user.set_unusable_password()
        user.save(using=self._db)
        return user

    def create_superuser(self, email: str, password: str | None = None, **fields: Any) -> "User":
        fields.update(is_staff=True, is_superuser=True)
        return self.create_user(email, password, **fields)


class User(AbstractBaseUser, PermissionsMixin):
    class Tier(models.TextChoices):
        STANDARD = "standard"
        PREMIUM = "premium"
        ENTERPRISE = "enterprise"

    class Status(models.TextChoices):
        ACTIVE = "active"
        INVITED = "invited"
        SUSPENDED = "suspended"

    class Kind(models.TextChoices):
        PERSON = "person"
        # A workspace's identity for a program (integrations.ServiceAccount): no password,
        # keys made for it by the workspace's owners and admins.
        SERVICE = "service"

    email = models.EmailField(unique=True)
    # Unique and lowercase (accounts.handles); left empty, save() derives one from the email.
    handle = models.CharField(
        max_length=HANDLE_MAX_LENGTH,
        unique=True,
        blank=True,
        validators=[RegexValidator(HANDLE_PATTERN, HANDLE_RULE)],
    )
    name = models.CharField(max_length=150, blank=True)
    tier = models.CharField(max_length=16, choices=Tier.choices, default=Tier.STANDARD)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.ACTIVE)
    kind = models.CharField(max_length=16, choices=Kind.choices, default=Kind.PERSON)
    is_staff = models.BooleanField(default=False)
    created_at = models.DateTimeField(default=timezone.now)

    objects = UserManager()
    # Not a column: the projects the request's credential is limited to (an API key's
    # ``projects``), set by authentication on the request's user; None, not limited.
    project_limit: frozenset[int] | None = None

    USERNAME_FIELD = "email"
    EMAIL_FIELD = "email"
    REQUIRED_FIELDS = []

    class Meta:
        ordering = ["id"]

    def __str__(self):
        return self.email

    @property
    def is_active(self) -> bool:  # type: ignore[override]  # the status decides; no column
        return self.status == self.Status.ACTIVE

    def clean(self):
        super().clean()
        self.email = self.__class__.objects.normalize_email(self.email).lower()

    def save(self, *args: Any, **kwargs: Any) -> None:
        # Every way a user comes to be (the manager, the admin's form, a factory) must leave
        # them a handle, as a slug is filled in from a title: derived here, the first free
        # candidate, and the next one when a concurrent save took it first.
        if self.handle:
            return super().save(*args, **kwargs)
        taken_before = set()
        for candidate in handle_candidates(self.email):
            if candidate in taken_before:
                continue
            others = User.objects.filter(handle=candidate).exclude(pk=self.pk)
            if others.exists():
                taken_before.add(candidate)
                continue
            self.handle = candidate
            try:
                with transaction.atomic():
                    return super().save(*args, **kwargs)
            except IntegrityError:
                if not User.objects.filter(handle=candidate).exclude(pk=self.pk).exists():
                    self.handle = ""
                    raise
                taken_before.add(candidate)
        raise AssertionError("unreachable: the candidates never run out")


class Role(models.TextChoices):
    OWNER = "owner"
    ADMIN = "admin"
    DEVELOPER = "developer"
    VIEWER = "viewer"


class Workspace(models.Model):
    name = models.CharField(max_length=200)
    slug = models.SlugField(max_length=200, unique=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["id"]

    def __str__(self):
        return self.name


class Membership(models.Model):
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships"
    )
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.DEVELOPER)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(fields=["workspace", "user"], name="membership_unique_user"),
        ]
        indexes = [models.Index(fields=["user", "workspace"])]

    def __str__(self):
        return f"{self.user} in {self.workspace} ({self.role})"


class ApiKey(models.Model):
    """An API key. Only a SHA-256 of the key is stored; the key itself is shown once."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_keys"
    )
    name = models.CharField(max_length=100)
    prefix = models.CharField(max_length=16, db_index=True)
    key_hash = models.CharField(max_length=64, unique=True)
    scopes = models.JSONField(default=list)
    # The ids of the projects the key is limited to; null, every project its owner sees.
    projects = models.JSONField(null=True, blank=True, default=None)
    expires_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    # The addresses it was used from, the latest last (at most ADDRESSES_KEPT): a new one is
    # written down, with an entry in the audit log of its owner's workspaces.
    addresses = models.JSONField(default=list, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-id"]
        verbose_name = "API key"

    def __str__(self):
        return f"{self.name} ({self.prefix}…)"

    @property
    def is_revoked(self) -> bool:
        return self.revoked_at is not None

    def is_expired(self, now=None) -> bool:
        return self.expires_at is not None and self.expires_at <= (now or timezone.now())


class OAuthApp(models.Model):
    """A workspace's registration of a third-party app (an OAuth 2.0 client): the
    django-oauth-toolkit application it completes, with the workspace whose users it asks and
    the most scopes it may ask them for."""

    application = models.OneToOneField(
        "oauth2_provider.Application",
        on_delete=models.CASCADE,
        primary_key=True,
        related_name="registration",
    )
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="oauth_apps")
    scopes = models.JSONField(default=list)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["application_id"]
        verbose_name = "OAuth app"

    def __str__(self):
        return self.application.name

    @property
    def id(self) -> int:
        return self.application_id


class AuditEntry(models.Model):
    """One credential event of a workspace, for its owners and admins
    (``GET /v1/workspaces/:id/audit-log``): a key or an app's token made, used for the first
    time from an address, revoked; an app registered or authorised; a service account
    changed. Who did it and through what credential, from which address."""

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="+")
    type = models.CharField(max_length=64)
    # A plain id, as the event log's: the entry outlives its actor.
    actor_id = models.BigIntegerField(null=True, blank=True)
    actor_detail = models.JSONField(null=True, blank=True)
    # What it is about: {"api_key": {...}}, {"app": {...}}, {"authorization": {...}} or
    # {"service_account": {...}}, as the API shows them (never a secret).
    subject = models.JSONField(default=dict)
    address = models.CharField(max_length=64, blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-id"]
        verbose_name_plural = "audit entries"
        indexes = [models.Index(fields=["workspace", "-id"], name="audit_of_workspace")]

    def __str__(self):
        return f"{self.type} #{self.pk}"


class AppAuthorization(models.Model):
    """A user's consent to an app: what its tokens for this user reach (the scopes granted
    and the projects the user chose). Its tokens work only while it exists: revoking it
    deletes it and them."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="app_authorizations"
    )
    application = models.ForeignKey(
        "oauth2_provider.Application", on_delete=models.CASCADE, related_name="+"
    )
    scopes = models.JSONField(default=list)
    projects = models.JSONField(default=list)
    # The addresses its tokens were used from, as an API key's.
    addresses = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["user", "application"], name="one_authorization_per_app"
            )
        ]

    def __str__(self):
        return f"{self.user_id} → {self.application_id}"


class EmailStatus(models.TextChoices):
    QUEUED = "queued"
    SENT = "sent"
    FAILED = "failed"


class Invitation(models.Model):
    EmailStatus = EmailStatus

    class Status(models.TextChoices):
        PENDING = "pending"
        ACCEPTED = "accepted"
        REVOKED = "revoked"
        EXPIRED = "expired"

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="invitations")
    email = models.EmailField()
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.DEVELOPER)
    projects = models.ManyToManyField("projects.Project", blank=True, related_name="+")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    token_hash = models.CharField(max_length=64, unique=True)
    # The token is made from it with SECRET_KEY (accounts.invitation_tokens): alone it opens
    # nothing, and the email's task makes the token from it instead of carrying it.
    token_nonce = models.CharField(max_length=64, blank=True, default="")
    invited_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+"
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="invitations"
    )
    expires_at = models.DateTimeField()
    accepted_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    # Whether the invitation's email went out (accounts.services.invitation_email_send): an
    # email that cannot be sent is retried, then marked failed, never lost without a trace.
    email_status = models.CharField(
        max_length=16, choices=EmailStatus.choices, default=EmailStatus.QUEUED
    )
    email_error = models.CharField(max_length=500, blank=True)
    email_attempts = models.PositiveSmallIntegerField(default=0)
    # When its email was last handed to the worker: one still queued long after this was lost
    # with a killed worker, and is sent again (accounts.emails.invitations_email_sweep).
    email_queued_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["workspace", "email"],
                condition=Q(status="pending"),
                name="invitation_one_pending_per_email",
            ),
        ]

    def __str__(self):
        return f"{self.email} → {self.workspace}"

    @property
    def effective_status(self) -> str:
        if self.status == self.Status.PENDING and self.expires_at <= timezone.now():
            return self.Status.EXPIRED
        return self.status


class DeniedToken(models.Model):
    """An access token, or a whole sign-in session, ended before its tokens expire (logout).

    ``key`` is ``jti:<token id>`` for one access token or ``sid:<session id>`` for every access
    token issued in a session (``accounts.token_denylist``). A row matters only until
    ``expires_at``, when the last token it names expires by itself; a periodic task purges
    the rows past it.
    """

    key = models.CharField(max_length=80, primary_key=True)
    expires_at = models.DateTimeField(db_index=True)

    def __str__(self):
        return f"{self.key} until {self.expires_at:%Y-%m-%d %H:%M:%S}"
