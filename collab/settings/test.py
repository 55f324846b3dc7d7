"""Settings for the test suite. CI points DATABASE_URL and REDIS_URL at real servers."""

import re

from .base import *  # noqa: F403
from .base import DATA_DIR, env

SECRET_KEY = "test-secret-key-not-for-production-use-0123456789"
DEBUG = False
ALLOWED_HOSTS = ["*"]
WEBHOOK_ALLOW_PRIVATE_NETWORKS = env.bool("WEBHOOK_ALLOW_PRIVATE_NETWORKS", default=True)
GIT_ALLOW_LOCAL_REPOSITORIES = env.bool("GIT_ALLOW_LOCAL_REPOSITORIES", default=True)
PASSWORD_HASHERS = [
    "django.contrib.auth.hashers.MD5PasswordHasher",
    "accounts.hashers.SecretHasher",
]
EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
STORAGES = {
    **STORAGES,
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}

DATA_DIR.mkdir(parents=True, exist_ok=True)

# The suite's own process keeps one connection per thread, as pytest-django expects; the
# servers and workers the end-to-end tests start run with the pool, as production does.
if DATABASES["default"]["ENGINE"] != "django.db.backends.sqlite3" and not env.bool(  # noqa: F405
    "DATABASE_POOL", default=False
):
    for _database in DATABASES.values():  # noqa: F405
        _database["OPTIONS"].pop("pool", None)
        _database["CONN_MAX_AGE"] = 60
        _database["CONN_HEALTH_CHECKS"] = True
# The test database has no replica of its own: the replica alias reads the same one.
if "replica" in DATABASES:  # noqa: F405
    DATABASES["replica"]["TEST"] = {"MIRROR": "default"}  # noqa: F405

# Each pytest-xdist worker gets its own Redis database, so caches and counters never mix.
_worker = env.str("PYTEST_XDIST_WORKER", default="gw0").removeprefix("gw")
if REDIS_URL:  # noqa: F405
    # count=1: "$" also matches the empty string after a replaced "/0", which gave ".../1/1".
    _redis_db = 1 + int(_worker or 0) % 15
    REDIS_URL = re.sub(r"(/\d+)?/?$", f"/{_redis_db}", REDIS_URL, count=1)  # noqa: F405
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": REDIS_URL,
        }
    }
    CELERY_BROKER_URL = REDIS_URL
    CELERY_RESULT_BACKEND = REDIS_URL
# Most tests run tasks in-process; tests of the worker itself start a real one.
CELERY_TASK_ALWAYS_EAGER = env.bool("CELERY_TASK_ALWAYS_EAGER", default=True)
CELERY_TASK_EAGER_PROPAGATES = True
# A beat a test killed holds the beat lock this long at most, not production's 30 s: the next
# test's beat (on the same Redis database) takes over quickly.
CELERY_BEAT_LOCK_TTL_SECONDS = env.float("CELERY_BEAT_LOCK_TTL_SECONDS", default=4.0)

# Limits so high no test meets a 429 it did not ask for (counters in Redis outlive a test);
# the rate-limit tests set their own, and the environment can still override each one.
RATE_LIMITS = {
    tier: env.int(f"RATE_LIMIT_{tier.upper()}", default=1_000_000)
    for tier in ("standard", "premium", "enterprise")
}
RATE_LIMIT_ANONYMOUS = env.int("RATE_LIMIT_ANONYMOUS", default=1_000_000)
RATE_LIMIT_PUSH = env.int("RATE_LIMIT_PUSH", default=1_000_000)
LOGIN_FAILURES_PER_EMAIL = env.int("LOGIN_FAILURES_PER_EMAIL", default=1_000_000)
LOGIN_FAILURES_PER_ADDRESS = env.int("LOGIN_FAILURES_PER_ADDRESS", default=1_000_000)
LOGIN_SLOWDOWN_AFTER = env.int("LOGIN_SLOWDOWN_AFTER", default=1_000_000)
