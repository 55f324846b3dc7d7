import secrets

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from accounts import services
from accounts.models import User
from collab.api.exceptions import ValidationFailed
from collab.api.scopes import ALL_SCOPES

ADMIN_EMAIL = "admin@collab.localhost"
WORKSPACE_NAME = "Default"
KEY_LIFETIME_DAYS = 365


class Command(BaseCommand):
    help = (
        "Run by ./run on every start. On the first start (no users yet) it creates an "
        f"administrator ({ADMIN_EMAIL}) with a random password, a workspace "
        f"'{WORKSPACE_NAME}' and a full-scope API key, and prints them once. Later starts "
        "print where the service listens."
    )

    def add_arguments(self, parser):
        parser.add_argument("--port", type=int, default=8000)
        parser.add_argument("--host", default="127.0.0.1")

    def handle(self, *args, port, host, **options):
        if not 0 < port < 65536:
            raise CommandError(f"--port must be between 1 and 65535, not {port}.")
        base_url = f"http://{host}:{port}"
        credentials = None
        if not User.objects.exists():
            credentials = self._first_start()
        if credentials is None:
            self.stdout.write(f"Collab is running at {base_url} — docs at {base_url}/v1/docs")
            return
        self._announce(base_url, *credentials)

    def _first_start(self) -> tuple[str, str, object] | None:
        password = secrets.token_urlsafe(18)
        lifetime = min(KEY_LIFETIME_DAYS, settings.API_KEY_MAX_LIFETIME_DAYS)
        try:
            with transaction.atomic():
                user, _ = services.user_create(
                    email=ADMIN_EMAIL,
                    password=password,
                    name="Administrator",
                    workspace_name=WORKSPACE_NAME,
                    role="owner",
                    is_staff=True,
                )
                api_key, plaintext = services.api_key_create(
                    user=user,
                    name="bootstrap",
                    scopes=list(ALL_SCOPES),
                    expires_in=f"{lifetime}d",
                )
        except ValidationFailed:
            # Another process bootstrapped between our check and our insert: its
            # credentials were printed there, so print none here.
            return None
        return password, plaintext, api_key

    def _announce(self, base_url: str, password: str, key: str, api_key) -> None:
        rule = "=" * 72
        expires = api_key.expires_at.date().isoformat() if api_key.expires_at else "never"
        lines = [
            rule,
            "Collab: first start. An administrator, a workspace and an API key were created.",
            "These credentials are shown ONCE, now. Store them somewhere safe.",
            "",
            f"  Admin site  {base_url}/admin/",
            f"  Email       {ADMIN_EMAIL}",
            f"  Password    {password}",
            f"  Workspace   {WORKSPACE_NAME}",
            f"  API key     {key}",
            f"              (every scope, expires {expires})",
            "",
            "  Try the API:",
            f'    curl -H "Authorization: Bearer {key}" {base_url}/v1/projects',
            "  or sign in for a short-lived token:",
            f"    curl -X POST {base_url}/v1/auth/login -H 'Content-Type: application/json' \\",
            f'      -d \'{{"email": "{ADMIN_EMAIL}", "password": "{password}"}}\'',
            "",
            f"  API docs    {base_url}/v1/docs",
            rule,
        ]
        self.stdout.write("\n".join(lines))
