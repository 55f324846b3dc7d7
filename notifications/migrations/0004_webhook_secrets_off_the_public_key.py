"""Webhook secrets encrypted under the key every embedded installation once shared.

Until each installation made secrets of its own (``collab.keyfile``), the embedded default
signed with a ``SECRET_KEY`` written in the repository, and derived from it the Fernet key of
webhook secrets at rest. Anyone could decrypt those. This re-encrypts each such secret under
the installation's current key, so webhooks keep signing with the secret their receivers know.
Secrets that already decrypt under the current keys are left alone; so is anything this
cannot read (it stays as it was, and its webhook's deliveries say so).
"""

import base64
import hashlib

from cryptography.fernet import Fernet, InvalidToken
from django.db import migrations

# The retired public default. Kept here only to read what was written under it.
PUBLIC_SECRET_KEY = "embedded-default-insecure-key-change-me"


def public_fernet() -> Fernet:
    digest = hashlib.sha256(f"collab-webhook-secrets:{PUBLIC_SECRET_KEY}".encode()).digest()
    return Fernet(base64.urlsafe_b64encode(digest))


def reencrypt(apps, schema_editor):
    from notifications import crypto

    Webhook = apps.get_model("notifications", "Webhook")
    public = public_fernet()
    for webhook in Webhook.objects.only("id", "secret_encrypted").iterator():
        try:
            crypto.secret_decrypt(webhook.secret_encrypted)
            continue
        except RuntimeError:
            pass
        try:
            secret = public.decrypt(webhook.secret_encrypted.encode()).decode()
        except InvalidToken:
            continue
        Webhook.objects.filter(pk=webhook.pk).update(
            secret_encrypted=crypto.secret_encrypt(secret)
        )


class Migration(migrations.Migration):
    dependencies = [("notifications", "0003_event_log_moves_to_events")]

    operations = [migrations.RunPython(reencrypt, migrations.RunPython.noop, elidable=True)]
