"""The embedded default: what runs with no environment at all (SQLite, no Redis)."""

from .base import *  # noqa: F403
from .base import DATA_DIR, env

DEBUG = env.bool("DEBUG", default=True)
SECRET_KEY = env.str("SECRET_KEY", default="embedded-default-insecure-key-change-me")
WEBHOOK_ALLOW_PRIVATE_NETWORKS = env.bool("WEBHOOK_ALLOW_PRIVATE_NETWORKS", default=True)
GIT_ALLOW_LOCAL_REPOSITORIES = env.bool("GIT_ALLOW_LOCAL_REPOSITORIES", default=True)

DATA_DIR.mkdir(parents=True, exist_ok=True)
