from django.core.management.base import BaseCommand, CommandError

from accounts import services
from accounts.models import User

from ._common import user_by_email


class Command(BaseCommand):
    help = f"Set a user's rate-limit tier: {', '.join(User.Tier.values)}."

    def add_arguments(self, parser):
        parser.add_argument("--email", required=True)
        parser.add_argument("--tier", required=True, help=", ".join(User.Tier.values))

    def handle(self, *args, email, tier, **options):
        tier = tier.strip().lower()
        if tier not in User.Tier.values:
            raise CommandError(
                f"Unknown tier '{tier}'; choose one of: {', '.join(User.Tier.values)}."
            )
        user = user_by_email(email)
        previous = user.tier
        if previous == tier:
            self.stdout.write(f"{user.email} is already on the {tier} tier.")
            return
        services.user_set_tier(user=user, tier=tier)
        self.stdout.write(f"{user.email}: tier {previous} → {tier}.")
