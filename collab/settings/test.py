"""Settings for the test suite. CI points DATABASE_URL and REDIS_URL at real servers."""

from .base import *  # noqa: F403
from .base import DATA_DIR, env

SECRET_KEY = "test-secret-key-not-for-production-use-0123456789"
DEBUG = False
ALLOWED_HOSTS = ["*"]
WEBHOOK_ALLOW_PRIVATE_NETWORKS = env.bool("WEBHOOK_ALLOW_PRIVATE_NETWORKS", default=True)
GIT_ALLOW_LOCAL_REPOSITORIES = env.bool("GIT_ALLOW_LOCAL_REPOSITORIES", default=True)
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}

DATA_DIR.mkdir(parents=True, exist_ok=True)
