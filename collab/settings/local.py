"""The embedded default: what runs with no environment at all (SQLite, no Redis).

Safe as shipped: DEBUG is off unless asked for (``DEBUG=1``), and the installation's secrets
(``SECRET_KEY``, and the key that encrypts webhook secrets at rest) are its own, made at the
first start and kept in the data folder (``collab.keyfile``); the environment still wins.
"""

import secrets

from cryptography.fernet import Fernet

from collab.keyfile import keyfile_secret

from .base import *  # noqa: F403
from .base import DATA_DIR, env

DEBUG = env.bool("DEBUG", default=False)
SECRET_KEY = env.str("SECRET_KEY", default="") or keyfile_secret(
    DATA_DIR / "secret_key", make=lambda: secrets.token_urlsafe(50)
)
WEBHOOK_ENCRYPTION_KEYS = env.list("WEBHOOK_ENCRYPTION_KEYS", default=[]) or [
    keyfile_secret(DATA_DIR / "webhook_encryption_key", make=lambda: Fernet.generate_key().decode())
]
WEBHOOK_ALLOW_PRIVATE_NETWORKS = env.bool("WEBHOOK_ALLOW_PRIVATE_NETWORKS", default=True)
GIT_ALLOW_LOCAL_REPOSITORIES = env.bool("GIT_ALLOW_LOCAL_REPOSITORIES", default=True)

DATA_DIR.mkdir(parents=True, exist_ok=True)
