from django.core.management.base import BaseCommand, CommandError

from accounts import keys, services
from accounts.models import ApiKey


class Command(BaseCommand):
    help = (
        "Revoke an API key, given the full key (looked up by its hash) or its display prefix "
        f"('{keys.KEY_PREFIX}' and 8 characters, as the admin and GET /v1/api-keys show it)."
    )

    def add_arguments(self, parser):
        parser.add_argument("key_or_prefix", metavar="KEY_OR_PREFIX")

    def handle(self, *args, key_or_prefix, **options):
        api_key = self._find(key_or_prefix)
        owner = api_key.user.email
        if api_key.is_revoked:
            self.stdout.write(
                f"API key '{api_key.name}' ({api_key.prefix}) of {owner} was already revoked "
                f"at {api_key.revoked_at.isoformat()}."
            )
            return
        services.api_key_revoke(api_key=api_key)
        self.stdout.write(f"Revoked API key '{api_key.name}' ({api_key.prefix}) of {owner}.")

    def _find(self, value: str) -> ApiKey:
        # The display form ends with an ellipsis ("clb_a1b2c3d4…"); accept it pasted as is.
        value = value.strip().removesuffix("…").removesuffix("...")
        keys_ = ApiKey.objects.select_related("user")
        if len(value) == keys.KEY_LENGTH and keys.looks_like_key(value):
            if not keys.is_well_formed(value):
                raise CommandError("This is not a valid API key: its checksum does not match.")
            api_key = keys_.filter(key_hash=keys.hash_key(value)).first()
            if api_key is None:
                raise CommandError("No API key matches this key.")
            return api_key
        if len(value) == keys.DISPLAY_PREFIX_LENGTH and keys.looks_like_key(value):
            matches = list(keys_.filter(prefix=value)[:10])
            if not matches:
                raise CommandError(f"No API key has the prefix {value}.")
            if len(matches) > 1:
                listed = "; ".join(f"id {k.pk} '{k.name}' of {k.user.email}" for k in matches)
                raise CommandError(
                    f"The prefix {value} is ambiguous: it matches {listed}. "
                    "Pass the full key, or revoke the right one in the admin."
                )
            return matches[0]
        raise CommandError(
            f"Expected a full API key ({keys.KEY_LENGTH} characters) or its "
            f"{keys.DISPLAY_PREFIX_LENGTH}-character prefix, both starting with "
            f"'{keys.KEY_PREFIX}'."
        )
