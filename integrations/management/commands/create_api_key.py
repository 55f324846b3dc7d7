from django.core.management.base import BaseCommand, CommandError

from accounts.management.commands._common import command_error, split_list, user_by_email
from accounts.models import ApiKey
from collab.api.exceptions import ApiError
from collab.api.scopes import ALL_SCOPES, invalid_scopes
from integrations import services


class Command(BaseCommand):
    help = (
        "Create an API key for a user. A summary goes first; the key itself is printed alone "
        "on the last line of standard output (so `... | tail -n1` captures it). It is shown "
        "only this once."
    )

    def add_arguments(self, parser):
        parser.add_argument("--email", required=True, help="The owner of the key.")
        parser.add_argument("--name", required=True, help="What the key is for.")
        parser.add_argument(
            "--scopes",
            required=True,
            help=f"Comma-separated scopes, or 'all'. Known: {', '.join(ALL_SCOPES)}.",
        )
        parser.add_argument(
            "--expires-in",
            default="1y",
            help="A number and a unit s, m, h, d, w, y ('90d', '12h'), or 'never'. "
            "Default: 1y, as over the API.",
        )
        parser.add_argument(
            "--projects",
            help="Comma-separated ids of the projects the key is limited to (projects the "
            "user sees). Default: every project the user sees.",
        )

    def handle(self, *args, email, name, scopes, expires_in, projects, **options):
        user = user_by_email(email)
        name = name.strip()
        if not name:
            raise CommandError("--name must not be empty.")
        if len(name) > ApiKey._meta.get_field("name").max_length:
            raise CommandError("--name is too long.")
        scope_list = list(ALL_SCOPES) if scopes.strip() == "all" else split_list(scopes)
        unknown = invalid_scopes(scope_list)
        if unknown:
            raise CommandError(
                f"Unknown scope(s): {', '.join(unknown)}. Known scopes: {', '.join(ALL_SCOPES)}."
            )
        project_ids = None if projects is None else _ids(projects)
        try:
            api_key, plaintext = services.api_key_issue(
                user=user,
                name=name,
                scopes=scope_list,
                expires_in=expires_in,
                projects=project_ids,
            )
        except ApiError as exc:
            raise command_error(
                exc, {"expiresIn": "--expires-in", "projects": "--projects"}
            ) from None

        if options["verbosity"] > 0:
            expires = api_key.expires_at.isoformat() if api_key.expires_at else "never"
            self.stdout.write(f"Created API key '{api_key.name}' for {user.email}")
            self.stdout.write(f"  prefix:  {api_key.prefix}")
            self.stdout.write(f"  scopes:  {', '.join(api_key.scopes)}")
            if api_key.projects is not None:
                self.stdout.write(f"  projects: {', '.join(map(str, api_key.projects))}")
            self.stdout.write(f"  expires: {expires}")
            if not user.is_active:
                self.stderr.write(
                    f"Warning: {user.email} is {user.status}; the key will not authenticate "
                    "until the account is active."
                )
            self.stdout.write("The key, shown only this once:")
        self.stdout.write(plaintext)


def _ids(raw: str) -> list[int]:
    values = split_list(raw)
    if not values or not all(value.isdigit() and int(value) > 0 for value in values):
        raise CommandError("--projects must be comma-separated project ids.")
    return [int(value) for value in values]
