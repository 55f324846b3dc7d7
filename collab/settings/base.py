"""Settings shared by every environment.

Everything configurable comes from the environment through one ``environ.Env`` instance,
which raises ``ImproperlyConfigured`` on a malformed value instead of guessing.
With nothing set, the service runs on its embedded default: SQLite, a local-memory cache
and a Celery broker kept on the filesystem (see ``CELERY_*`` below).
"""

from datetime import timedelta
from ipaddress import ip_network
from pathlib import Path

import environ
from csp.constants import NONCE, NONE, SELF
from django.core.exceptions import ImproperlyConfigured

from collab import __version__
from collab.logs import LOG_FORMATS, configure_structlog, logging_config

BASE_DIR = Path(__file__).resolve().parent.parent.parent

env = environ.Env()

# Where the embedded default keeps its database, broker queue and beat schedule.
DATA_DIR = Path(env.str("COLLAB_DATA_DIR", default=str(BASE_DIR / "var")))

SECRET_KEY = env.str("SECRET_KEY", default="")
DEBUG = env.bool("DEBUG", default=False)
ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=["localhost", "127.0.0.1", "[::1]"])

INSTALLED_APPS = [
    # Django's admin, whose site refuses control characters in one-line fields (collab.adminsite).
    "collab.apps.AdminConfig",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework_simplejwt.token_blacklist",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "corsheaders",
    "oauth2_provider",
    "events",
    "idempotency",
    "ratelimits",
    "accounts",
    "projects",
    "issues",
    "gitintegration",
    "comments",
    "search",
    "notifications",
    "analytics",
    "transfer",
    "integrations",
    "demo",
    # After every migrate: foreign keys delete in the database too (collab.db.cascades).
    "collab.apps.CollabConfig",
]

MIDDLEWARE = [
    # Before anything asks for the Host: a route may take any (the metrics' scrape by pod IP).
    "collab.api.middleware.RouteHostMiddleware",
    # Outermost but that: one line per request, whatever answered it (collab/accesslog.py).
    "collab.accesslog.AccessLogMiddleware",
    # First of all: it times every answer, the other layers' refusals included.
    "collab.api.metrics.HttpMetricsMiddleware",
    "collab.api.middleware.RequestIdMiddleware",
    # First after the id: every later layer, scope check and view sees a HEAD as the GET it is.
    "collab.api.middleware.HeadAsGetMiddleware",
    # Every statement from here in has a deadline (collab/db/querycost.py).
    "collab.db.querycost.StatementDeadlineMiddleware",
    "collab.db.routers.ReplicaPinMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "collab.csp.PolicyMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "corsheaders.middleware.CorsMiddleware",
    # Before the body guard, so its 413s and 415s count and carry the rate-limit headers.
    "collab.api.ratelimit.RateLimitMiddleware",
    # Inside the limiter, which gives a 304 back; ETags over the bodies of every view below.
    "collab.api.conditional.ConditionalRequestMiddleware",
    "collab.api.middleware.ApiBodyGuardMiddleware",
    "collab.api.middleware.ApiQueryGuardMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "collab.urls"
WSGI_APPLICATION = "collab.wsgi.application"
APPEND_SLASH = False

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "collab" / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

DATABASES = {
    "default": env.db_url("DATABASE_URL", default=f"sqlite:///{DATA_DIR / 'collab.sqlite3'}"),
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # The web process and the Celery worker share one file: WAL lets readers run beside
    # the writer, IMMEDIATE takes the write lock up front instead of failing mid-transaction.
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {
            "timeout": 30,
            "transaction_mode": "IMMEDIATE",
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        }
    )
    # Each thread of the web pool (collab/asgi.py) and the worker keep their connection from
    # one request or task to the next: opening one (the pragmas, Django's SQL functions) and
    # closing it (the last one out checkpoints the WAL) took a quarter of a server's CPU.
    DATABASES["default"].setdefault("CONN_MAX_AGE", env.int("CONN_MAX_AGE", default=600))
    DATABASES["default"].setdefault("CONN_HEALTH_CHECKS", True)
elif env.bool("DATABASE_POOL", default=True):
    # The ASGI server runs each request's sync code in a thread of its own, so connections
    # kept per thread (CONN_MAX_AGE) would be opened on every request: a pool shares them.
    DATABASES["default"]["CONN_MAX_AGE"] = 0
    DATABASES["default"].setdefault("OPTIONS", {})["pool"] = {
        "min_size": env.int("DATABASE_POOL_MIN", default=2),
        "max_size": env.int("DATABASE_POOL_MAX", default=20),
        "timeout": env.float("DATABASE_POOL_TIMEOUT", default=10.0),
    }
else:
    DATABASES["default"].setdefault("CONN_MAX_AGE", env.int("CONN_MAX_AGE", default=60))
    DATABASES["default"].setdefault("CONN_HEALTH_CHECKS", True)
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# Behind PgBouncer in transaction pooling, one connection's queries may reach different server
# sessions, so nothing may outlive a transaction on the server. Django binds parameters on
# the client (no server-side prepared statements; psycopg is told never to prepare either),
# and server-side cursors (``.iterator()``) are the one session feature it would use.
DATABASE_TRANSACTION_POOLING = env.bool("DATABASE_TRANSACTION_POOLING", default=False)
# An optional read replica: reads that need not see the caller's own writes go there
# (collab.db.routers); a request that wrote reads the primary for the rest of the request.
DATABASE_REPLICA_URL = env.str("DATABASE_REPLICA_URL", default="")
if DATABASE_REPLICA_URL:
    DATABASES["replica"] = {
        **DATABASES["default"],
        **env.db_url_config(DATABASE_REPLICA_URL),
        "OPTIONS": {**DATABASES["default"].get("OPTIONS", {})},
    }
    DATABASE_ROUTERS = ["collab.db.routers.PrimaryReplicaRouter"]
if DATABASE_TRANSACTION_POOLING:
    for _database in DATABASES.values():
        _database["DISABLE_SERVER_SIDE_CURSORS"] = True
        _database.setdefault("OPTIONS", {})["prepare_threshold"] = None

# Query cost of web requests (collab/db/querycost.py): a statement of a request that runs longer
# than this is cancelled (PostgreSQL's statement_timeout, set per transaction; SQLite's
# progress handler) and answered 503 with Retry-After. 0: no limit. Commands, migrations
# and Celery tasks are not limited.
DATABASE_STATEMENT_TIMEOUT_MS = env.int("DATABASE_STATEMENT_TIMEOUT_MS", default=15000)
# What a 503 for a cancelled statement tells the client to wait, in seconds.
DATABASE_TIMEOUT_RETRY_AFTER = env.int("DATABASE_TIMEOUT_RETRY_AFTER", default=5)
# "Best match first" ranks only the newest SEARCH_RANK_CANDIDATES matches (collab.db.fulltext);
# older ones follow, newest first. 0: rank every match. With SEARCH_RANK_INDEX on, PostgreSQL
# with the RUM extension reads each page from the rank indexes (manage.py search_index) instead,
# every match ranked. Off by default: RUM gives the hits that rank the same in an order that
# is not always the same from one page size to another, so pages can repeat or skip them.
SEARCH_RANK_INDEX = env.bool("SEARCH_RANK_INDEX", default=False)
# 200: a page of a word in 5% of a million issues walks its project's newest 4,000 issues for
# them (1.6 ms of the database), where the newest 500 took 10,000 (4.3 ms): the request 11 ms
# in process, 13 at 500 (docs/guide/filters-and-search.md).
SEARCH_RANK_CANDIDATES = env.int("SEARCH_RANK_CANDIDATES", default=200)
# A query with at most this many matches has every one ranked (when it is more than
# SEARCH_RANK_CANDIDATES): reading so few through the full-text index costs less than walking
# the newest rows for candidates.
SEARCH_RANK_EVERY_UP_TO = env.int("SEARCH_RANK_EVERY_UP_TO", default=500)

REDIS_URL = env.str("REDIS_URL", default="")

if REDIS_URL:
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": REDIS_URL,
        }
    }
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

# Rate limits (docs/guide/rate-limits.md, collab/api/ratelimit.py). Requests per window, counted per
# account at its tier's limit whatever the credential, and per client address for requests
# without valid credentials. A window starts with its first request and lasts an hour.
RATE_LIMIT_ENABLED = env.bool("RATE_LIMIT_ENABLED", default=True)
RATE_LIMITS = {
    "standard": env.int("RATE_LIMIT_STANDARD", default=1000),
    "premium": env.int("RATE_LIMIT_PREMIUM", default=5000),
    "enterprise": env.int("RATE_LIMIT_ENTERPRISE", default=10000),
}
RATE_LIMIT_ANONYMOUS = env.int("RATE_LIMIT_ANONYMOUS", default=60)
RATE_LIMIT_WINDOW_SECONDS = env.int("RATE_LIMIT_WINDOW_SECONDS", default=3600)
# Where counters live: "redis" (one atomic script per request) or "database" (one atomic
# upsert per request, the embedded default). Both count exactly across processes.
# Where JWT requests ask whether their token was ended by a logout (accounts.token_denylist).
# The database answers within the query that loads the token's user, at no extra cost;
# "redis" adds a round trip per request and is there for databases under strain.
TOKEN_DENYLIST_BACKEND = env.str("TOKEN_DENYLIST_BACKEND", default="database")
RATE_LIMIT_BACKEND = env.str("RATE_LIMIT_BACKEND", default="redis" if REDIS_URL else "database")
if RATE_LIMIT_BACKEND not in ("redis", "database") or (
    RATE_LIMIT_BACKEND == "redis" and not REDIS_URL
):
    raise ImproperlyConfigured(
        f"RATE_LIMIT_BACKEND={RATE_LIMIT_BACKEND!r}: use 'database', or 'redis' with REDIS_URL."
    )
RATE_LIMIT_KEY_PREFIX = env.str("RATE_LIMIT_KEY_PREFIX", default="collab:rl:")
# A Redis call slower than this fails open (the request is served, a warning logged), and the
# limiter then leaves Redis alone for RATE_LIMIT_FAIL_OPEN_SECONDS before trying again.
RATE_LIMIT_REDIS_TIMEOUT = env.float("RATE_LIMIT_REDIS_TIMEOUT", default=0.25)
RATE_LIMIT_FAIL_OPEN_SECONDS = env.float("RATE_LIMIT_FAIL_OPEN_SECONDS", default=5.0)
# Reverse proxies in front of the service that append the address they saw to X-Forwarded-For.
# 0: the client address is REMOTE_ADDR and X-Forwarded-For is ignored (clients can forge it).
RATE_LIMIT_TRUSTED_PROXIES = env.int("RATE_LIMIT_TRUSTED_PROXIES", default=0)

# Sign-in protection (accounts/login_protection.py): failed logins within the window, per email
# and per client address. From LOGIN_SLOWDOWN_AFTER failures for an email each next attempt
# waits (1 s, 2 s, ...); at the limit the email or address is refused for LOGIN_LOCKOUT_SECONDS.
LOGIN_FAILURE_WINDOW_SECONDS = env.int("LOGIN_FAILURE_WINDOW_SECONDS", default=15 * 60)
LOGIN_FAILURES_PER_EMAIL = env.int("LOGIN_FAILURES_PER_EMAIL", default=5)
LOGIN_FAILURES_PER_ADDRESS = env.int("LOGIN_FAILURES_PER_ADDRESS", default=20)
LOGIN_SLOWDOWN_AFTER = env.int("LOGIN_SLOWDOWN_AFTER", default=3)
LOGIN_LOCKOUT_SECONDS = env.int("LOGIN_LOCKOUT_SECONDS", default=15 * 60)

AUTH_USER_MODEL = "accounts.User"
# The API plumbing (collab/api) names no app: the models it keeps its state in are given here.
IDEMPOTENCY_KEY_MODEL = "idempotency.IdempotencyKey"
RATE_LIMIT_COUNTER_MODEL = "ratelimits.RateLimitCounter"
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
    {"NAME": "accounts.passwords.NotBlankValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "staticfiles"

# Bodies over this answer 413 before anything reads them (docs/guide/envelope-and-errors.md).
DATA_UPLOAD_MAX_MEMORY_SIZE = env.int("MAX_BODY_BYTES", default=1024 * 1024)
# A request head not complete this long after the connection (or its first byte) is closed
# by the web server (collab/http_protocol.py); nginx's client_header_timeout matches it.
HEADER_TIMEOUT_SECONDS = env.float("HEADER_TIMEOUT_SECONDS", default=20.0)
if not HEADER_TIMEOUT_SECONDS > 0:
    raise ImproperlyConfigured(f"HEADER_TIMEOUT_SECONDS={HEADER_TIMEOUT_SECONDS}: use seconds > 0.")

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["accounts.authentication.BearerAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": [
        "collab.api.permissions.IsAuthenticated",
        "collab.api.permissions.HasScope",
    ],
    "DEFAULT_RENDERER_CLASSES": ["collab.api.renderers.EnvelopeRenderer"],
    "DEFAULT_PARSER_CLASSES": ["collab.api.parsers.JSONObjectParser"],
    "DEFAULT_PAGINATION_CLASS": "collab.api.pagination.PagePagination",
    "DEFAULT_FILTER_BACKENDS": ["collab.api.filters.FilterBackend"],
    "DEFAULT_SCHEMA_CLASS": "collab.api.schema.EnvelopeAutoSchema",
    "DEFAULT_METADATA_CLASS": "collab.api.metadata.ApiMetadata",
    "EXCEPTION_HANDLER": "collab.api.exceptions.exception_handler",
    "UNAUTHENTICATED_USER": None,
    "PAGE_SIZE": 20,
    "DATETIME_FORMAT": "iso-8601",
    "COERCE_DECIMAL_TO_STRING": False,
}

API_KEY_ALLOW_NO_EXPIRY = env.bool("API_KEY_ALLOW_NO_EXPIRY", default=True)
API_KEY_MAX_LIFETIME_DAYS = env.int("API_KEY_MAX_LIFETIME_DAYS", default=3660)
INVITATION_LIFETIME = timedelta(days=env.int("INVITATION_LIFETIME_DAYS", default=7))

SIMPLE_JWT = {
    "ACCESS_TOKEN_LIFETIME": timedelta(minutes=env.int("JWT_ACCESS_TOKEN_MINUTES", default=15)),
    "REFRESH_TOKEN_LIFETIME": timedelta(days=env.int("JWT_REFRESH_TOKEN_DAYS", default=7)),
    "ROTATE_REFRESH_TOKENS": True,
    "BLACKLIST_AFTER_ROTATION": True,
    "UPDATE_LAST_LOGIN": False,
    "ALGORITHM": "HS256",
    "AUTH_HEADER_TYPES": ("Bearer",),
    "USER_ID_FIELD": "id",
    "USER_ID_CLAIM": "user_id",
}
# A rotated refresh token presented again later than this after its rotation ends its whole
# session (accounts.services.auth_refresh); sooner, it is a retry or a race and is only refused.
JWT_REFRESH_REUSE_GRACE_SECONDS = env.int("JWT_REFRESH_REUSE_GRACE_SECONDS", default=10)

# OAuth 2.0 for third-party apps (django-oauth-toolkit; docs/guide/integrations.md). Only the
# authorization-code grant with PKCE (S256) and refresh tokens: every RFC 9700 gate is on, so
# the implicit and password grants, a "plain" challenge and a token in the query string are
# refused, tokens are stored as their SHA-256 alone, a refresh token is rotated at each use and
# a spent one presented again revokes the whole grant. An app's scopes are the API's own, as
# many as its registration allows (accounts.oauth.AppScopes).
OAUTH2_PROVIDER = {
    "SCOPES_BACKEND_CLASS": "accounts.oauth.AppScopes",
    # Client secrets are random: a salted SHA-256 (accounts.hashers), not the passwords' PBKDF2.
    "CLIENT_SECRET_HASHER": "secret_sha256",
    "ACCESS_TOKEN_GENERATOR": "accounts.oauth.access_token_generate",
    "REFRESH_TOKEN_GENERATOR": "accounts.oauth.refresh_token_generate",
    "ACCESS_TOKEN_EXPIRE_SECONDS": env.int("OAUTH_ACCESS_TOKEN_SECONDS", default=3600),
    "REFRESH_TOKEN_EXPIRE_SECONDS": env.int("OAUTH_REFRESH_TOKEN_SECONDS", default=60 * 86400),
    "AUTHORIZATION_CODE_EXPIRE_SECONDS": 60,
    "ROTATE_REFRESH_TOKEN": True,
    "REFRESH_TOKEN_REUSE_PROTECTION": True,
    "PKCE_REQUIRED": True,
    "REQUEST_APPROVAL_PROMPT": "force",
    "ALLOWED_REDIRECT_URI_SCHEMES": ["https", "http"],
    "ALLOWED_SCHEMES": ["https", "http"],
    "OAUTH2_RESPONSE_TYPES_SUPPORTED": ["code"],
    "OAUTH2_GRANT_TYPES_SUPPORTED": ["authorization_code", "refresh_token"],
    "OAUTH2_TOKEN_ENDPOINT_AUTH_METHODS_SUPPORTED": [
        "client_secret_basic",
        "client_secret_post",
        "none",
    ],
    "COMPLIANT_BCP_RFC9700_IMPLICIT_GRANT": True,
    "COMPLIANT_BCP_RFC9700_PASSWORD_GRANT": True,
    "COMPLIANT_BCP_RFC9700_PKCE_METHOD": True,
    "COMPLIANT_BCP_RFC9700_ACCESS_TOKEN_TRANSPORT": True,
    "COMPLIANT_BCP_RFC9700_AUTHZ_RESPONSE_ISS": True,
    "COMPLIANT_BCP_RFC9700_TOKEN_STORAGE": True,
    "COMPLIANT_BCP_RFC9700_REFRESH_TOKEN": True,
    "COMPLIANT_BCP_RFC9700_PKCE_REQUIRED": True,
}
# People's passwords with Django's hashers (PBKDF2 first); the service's own random secrets
# with accounts.hashers.SecretHasher, which no password is hashed with.
PASSWORD_HASHERS = [
    "django.contrib.auth.hashers.PBKDF2PasswordHasher",
    "django.contrib.auth.hashers.PBKDF2SHA1PasswordHasher",
    "django.contrib.auth.hashers.Argon2PasswordHasher",
    "django.contrib.auth.hashers.BCryptSHA256PasswordHasher",
    "django.contrib.auth.hashers.ScryptPasswordHasher",
    "accounts.hashers.SecretHasher",
]
# "http" stays among the redirect schemes for native apps listening on the loopback (RFC 8252);
# an app's registration takes http on the loopback alone (integrations.oauth), which the
# toolkit's deploy check cannot see.
SILENCED_SYSTEM_CHECKS = ["oauth2_provider.W008"]
# django-oauth-toolkit's own models (named, so that migrations depending on them resolve).
OAUTH2_PROVIDER_APPLICATION_MODEL = "oauth2_provider.Application"
OAUTH2_PROVIDER_ACCESS_TOKEN_MODEL = "oauth2_provider.AccessToken"
OAUTH2_PROVIDER_REFRESH_TOKEN_MODEL = "oauth2_provider.RefreshToken"
OAUTH2_PROVIDER_GRANT_MODEL = "oauth2_provider.Grant"
OAUTH2_PROVIDER_ID_TOKEN_MODEL = "oauth2_provider.IDToken"
# Where the consent page sends a visitor who is not signed in (integrations.oauth_pages).
LOGIN_URL = "/oauth/login"

SPECTACULAR_SETTINGS = {
    "TITLE": "Collab API",
    "DESCRIPTION": (
        "Project collaboration: workspaces, projects, issues, git, notifications and "
        "analytics. Every response is a JSON envelope; the API guide (docs/guide/) is the contract."
    ),
    "VERSION": __version__,
    "SERVE_INCLUDE_SCHEMA": False,
    "SCHEMA_PATH_PREFIX": r"/v1",
    "COMPONENT_SPLIT_REQUEST": True,
    "SERVE_PERMISSIONS": ["rest_framework.permissions.AllowAny"],
    "SERVE_AUTHENTICATION": [],
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "collab.api.schema.postprocess_envelope",
        "collab.api.schema_links.postprocess_links",
        "collab.api.schema_shared.postprocess_shared",
    ],
    # Several models have a "status": name each choice set after its model.
    "ENUM_NAME_OVERRIDES": {
        "UserStatusEnum": "accounts.models.User.Status",
        "InvitationStatusEnum": "accounts.models.Invitation.Status",
        "ProjectStatusEnum": "projects.models.Project.Status",
        "IssueStatusEnum": "issues.models.Status",
        "DeliveryStatusEnum": "notifications.models.Delivery.Status",
        "PullRequestStateEnum": "gitintegration.models.PullRequest.State",
        "PullRequestStateChangeEnum": ["open", "closed"],
        "ReviewStateEnum": "gitintegration.models.Review.State",
        "SearchHitTypeEnum": "search.models.HitType",
        "TypeEnum": "issues.models.IssueType",
        "RoleEnum": "accounts.models.Role",
        "ServiceAccountRoleEnum": "integrations.serializers.SERVICE_ROLE_CHOICES",
        "UserKindEnum": "accounts.models.User.Kind",
    },
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
}

CORS_ALLOWED_ORIGINS = env.list("CORS_ALLOWED_ORIGINS", default=[])
CORS_EXPOSE_HEADERS = [
    "Link",
    "Location",
    "X-Request-Id",
    "X-RateLimit-Limit",
    "X-RateLimit-Remaining",
    "X-RateLimit-Used",
    "X-RateLimit-Reset",
    "Retry-After",
    "Idempotent-Replayed",
]

EMAIL_CONFIG = env.email_url("EMAIL_URL", default="consolemail://")
vars().update(EMAIL_CONFIG)
# A mail server that accepts a connection and never answers fails the send after this, to be
# tried again, instead of holding a worker forever.
EMAIL_TIMEOUT = env.int("EMAIL_TIMEOUT", default=30)
DEFAULT_FROM_EMAIL = env.str("DEFAULT_FROM_EMAIL", default="Collab <no-reply@collab.localhost>")
# Links in emails point here (the invitation acceptance page of a front end, for example).
PUBLIC_BASE_URL = env.str("PUBLIC_BASE_URL", default="http://127.0.0.1:8000")

WEBHOOK_ALLOW_PRIVATE_NETWORKS = env.bool("WEBHOOK_ALLOW_PRIVATE_NETWORKS", default=False)

# Webhook delivery (notifications/delivery.py). A failed attempt is tried again after
# WEBHOOK_RETRY_BASE_SECONDS, doubling up to WEBHOOK_RETRY_MAX_SECONDS, with +-20% jitter,
# until WEBHOOK_MAX_ATTEMPTS (the defaults span about a day). A hook whose deliveries all fail
# for WEBHOOK_DISABLE_AFTER_HOURS is switched off and the workspace's admins emailed.
WEBHOOK_TIMEOUT_SECONDS = env.float("WEBHOOK_TIMEOUT_SECONDS", default=10.0)
WEBHOOK_RETRY_BASE_SECONDS = env.float("WEBHOOK_RETRY_BASE_SECONDS", default=15.0)
WEBHOOK_RETRY_MAX_SECONDS = env.float("WEBHOOK_RETRY_MAX_SECONDS", default=4 * 3600.0)
WEBHOOK_MAX_ATTEMPTS = env.int("WEBHOOK_MAX_ATTEMPTS", default=15)
WEBHOOK_DISABLE_AFTER_HOURS = env.float("WEBHOOK_DISABLE_AFTER_HOURS", default=72.0)
# A worker sending a delivery holds it for the timeout plus this margin; a worker killed
# mid-send leaves it to be taken up again once the lease lapses.
WEBHOOK_LEASE_MARGIN_SECONDS = env.float("WEBHOOK_LEASE_MARGIN_SECONDS", default=20.0)
# Retries due within this many seconds are queued with a countdown; later ones wait on their
# row for the sweeper (below a Redis broker's visibility timeout, or they would be redelivered).
# None on the embedded default's broker: its worker holds a countdown's task in memory (lost if
# it is killed) and, once due, ahead of everything queued since, so a wave of retries to a
# dead receiver held up every other project's events; there the rows wait for the sweeper.
WEBHOOK_COUNTDOWN_MAX_SECONDS = env.float(
    "WEBHOOK_COUNTDOWN_MAX_SECONDS", default=600.0 if REDIS_URL else 0.0
)
# Threads per worker process sending to webhooks side by side (a task's deliveries to several
# webhooks go out at once, each webhook's in turn).
WEBHOOK_SENDERS = env.int("WEBHOOK_SENDERS", default=32)
# One receiver's share of a worker process (notifications/transport.py): deliveries in flight
# at once, how long a sender waits for a turn before deferring its delivery by about
# WEBHOOK_BUSY_DEFER_SECONDS, and the network failures in a row after which the receiver is
# paused for WEBHOOK_HOST_PAUSE_SECONDS (doubling while it keeps failing, at most tenfold).
WEBHOOK_HOST_CONCURRENCY = env.int("WEBHOOK_HOST_CONCURRENCY", default=8)
WEBHOOK_HOST_WAIT_SECONDS = env.float("WEBHOOK_HOST_WAIT_SECONDS", default=0.25)
WEBHOOK_BUSY_DEFER_SECONDS = env.float("WEBHOOK_BUSY_DEFER_SECONDS", default=2.0)
WEBHOOK_HOST_FAILURES_TO_PAUSE = env.int("WEBHOOK_HOST_FAILURES_TO_PAUSE", default=3)
WEBHOOK_HOST_PAUSE_SECONDS = env.float("WEBHOOK_HOST_PAUSE_SECONDS", default=15.0)
# The sweeper runs this often and takes over work left without a task for the grace period.
# With Redis, a fan-out task waits this long before it reads the events due, so that the
# commits of that moment go out with it rather than each in a task of its own (a task costs
# the worker far more than an event's share of one). 0: each at once.
WEBHOOK_FANOUT_GATHER_SECONDS = env.float("WEBHOOK_FANOUT_GATHER_SECONDS", default=0.02)
# (The embedded default sweeps more often: its retries and deferrals wait for the sweeper.)
WEBHOOK_SWEEP_SECONDS = env.float("WEBHOOK_SWEEP_SECONDS", default=30.0 if REDIS_URL else 5.0)
WEBHOOK_SWEEP_GRACE_SECONDS = env.float("WEBHOOK_SWEEP_GRACE_SECONDS", default=10.0)
# The "webhook switched off" email still owed this long after its task was handed over is
# queued again by the sweeper; a worker sending it holds it this long (its lease).
WEBHOOK_DISABLED_NOTIFY_GRACE_SECONDS = env.float(
    "WEBHOOK_DISABLED_NOTIFY_GRACE_SECONDS", default=300.0
)
# Fernet keys for webhook secrets at rest (first encrypts); derived from SECRET_KEY if unset.
WEBHOOK_ENCRYPTION_KEYS = env.list("WEBHOOK_ENCRYPTION_KEYS", default=[])

# The event log (events/) and its stream (notifications/stream.py). The log's consumers, each
# told an event's id once the transaction recording it commits: the webhooks' fan-out and the
# stream's wake-up. The log itself imports none of them.
EVENT_LOG_CONSUMERS = ["notifications.fanout.events_committed"]
EVENT_RETENTION_DAYS = env.int("EVENT_RETENTION_DAYS", default=90)
EVENT_STREAM_CHANNEL = env.str("EVENT_STREAM_CHANNEL", default="collab:events")
EVENT_STREAM_HEARTBEAT_SECONDS = env.float("EVENT_STREAM_HEARTBEAT_SECONDS", default=15.0)
# How long one stream stays open; 0: until the client leaves. Past it the server ends the
# response, and the client reconnects with Last-Event-ID, missing nothing.
EVENT_STREAM_MAX_SECONDS = env.float("EVENT_STREAM_MAX_SECONDS", default=0.0)
# Without Redis the hub polls the log this often; with it, it still looks this often in case
# a wake-up was lost.
EVENT_STREAM_POLL_SECONDS = env.float("EVENT_STREAM_POLL_SECONDS", default=0.5)
EVENT_STREAM_SAFETY_POLL_SECONDS = env.float("EVENT_STREAM_SAFETY_POLL_SECONDS", default=5.0)
EVENT_STREAM_QUEUE_SIZE = env.int("EVENT_STREAM_QUEUE_SIZE", default=10000)
# The pages' Content-Security-Policy (collab/csp.py; other responses get "default-src 'none'").
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [SELF],
        "script-src": [SELF, NONCE],
        "style-src": [SELF, NONCE],
        # Swagger UI's icons are data: images in its stylesheet.
        "img-src": [SELF, "data:"],
        "object-src": [NONE],
        "base-uri": [SELF],
        "form-action": [SELF],
        "frame-ancestors": [NONE],
    }
}
# Open streams one credential may hold at once (an API key, or a user signed in with JWT or
# OAuth), across every process (Redis) or in this one (no Redis).
STREAM_MAX_PER_CREDENTIAL = env.int("STREAM_MAX_PER_CREDENTIAL", default=25)
# CPU time one Markdown parse may take (comments.markdown); past it the body shows as text.
MARKDOWN_RENDER_BUDGET_MS = env.float("MARKDOWN_RENDER_BUDGET_MS", default=100.0)
GIT_ALLOW_LOCAL_REPOSITORIES = env.bool("GIT_ALLOW_LOCAL_REPOSITORIES", default=False)

# Git integration (gitintegration/). The service keeps a bare mirror of each registered
# repository here, fetched on registration, on request, on push notifications and every
# GIT_SYNC_INTERVAL_SECONDS from beat. Merges are committed as GIT_COMMITTER_* (the author is
# the user who merges) and pushed back to the origin with the server's own git credentials.
GIT_STORAGE_DIR = Path(env.str("GIT_STORAGE_DIR", default=str(DATA_DIR / "git")))
GIT_SYNC_INTERVAL_SECONDS = env.int("GIT_SYNC_INTERVAL_SECONDS", default=900)
GIT_TIMEOUT_SECONDS = env.int("GIT_TIMEOUT_SECONDS", default=120)
# A repository left pending or syncing this long has nobody working on it (a worker killed
# mid-sync): the sweep, every GIT_SYNC_SWEEP_SECONDS, queues its sync again. The default is
# the git task's hard time limit (below), past which no sync can still be running.
GIT_SYNC_STUCK_SECONDS = env.int("GIT_SYNC_STUCK_SECONDS", default=GIT_TIMEOUT_SECONDS * 12 + 120)
GIT_SYNC_SWEEP_SECONDS = env.float("GIT_SYNC_SWEEP_SECONDS", default=60.0)
GIT_COMMITTER_NAME = env.str("GIT_COMMITTER_NAME", default="Collab")
GIT_COMMITTER_EMAIL = env.str("GIT_COMMITTER_EMAIL", default="git@collab.localhost")
# Push notifications (POST /v1/repositories/:id/push) per repository and hour, signed or not.
RATE_LIMIT_PUSH = env.int("RATE_LIMIT_PUSH", default=600)

# Celery. With REDIS_URL, Redis is broker and result store. Without it, the embedded default
# keeps the queue in files under DATA_DIR (kombu's filesystem transport): tasks still leave
# the request and run in a separate worker process, with no server to install.
#
# Queues by kind, so that a flood of one kind cannot starve the others: a worker consumes the
# queues it is given (`celery -A collab worker -Q default,webhooks,git,analytics,email,exports`
# for all six, which is also what a worker without -Q takes); workers given one queue each isolate
# them. Routes live here, by task name, never in the task decorators; tests/test_celery_cluster
# checks that every task is listed. Tasks are acknowledged after they run (acks_late, and
# reject_on_worker_lost): a task whose worker dies runs again, so every task is safe to run
# twice, as follows.
#
# task                         queue      safe to run twice because
# notifications.tasks.
#   event_fanout               webhooks   it locks the event rows and skips those dispatched;
#                                         a delivery is unique per (webhook, event). With
#                                         Redis the commits' fan-outs coalesce: one queued
#                                         takes every event due (notifications.fanout)
#   webhook_deliver            webhooks   it claims the delivery with a conditional UPDATE (a
#                                         lease): one POST per due attempt; one cut off by a
#                                         dead worker is sent again as the next attempt, under
#                                         the same delivery id (receivers dedupe on it)
#   deliveries_sweep           webhooks   it only queues the two above for rows still due,
#                                         and webhook_disabled_notify for emails still owed,
#                                         each taken first with a conditional UPDATE
#   webhook_disabled_notify    email      it claims the email (a conditional UPDATE, a lease)
#                                         and marks it once sent: a second run, or one for a
#                                         webhook switched back on, sends nothing; a send cut
#                                         off by a dead worker is sent again once its lease
#                                         lapses (at least once)
# events.tasks.
#   events_purge               default    it deletes by age; the purge mark only moves up
# ratelimits.tasks.
#   rate_limit_counters_purge  default    it deletes by age
# accounts.tasks.
#   invitation_send_email      email      it skips an invitation no longer pending, or whose
#                                         token the sweep below replaced; otherwise a second
#                                         run sends the email again (at least once)
#   invitations_email_sweep    email      it takes each invitation with a conditional UPDATE
#                                         (a new token) before it queues its email
#   denied_tokens_purge        default    it deletes rows whose tokens have expired
# comments.tasks.
#   mentions_notify            email      it claims each mention (a conditional UPDATE, a
#                                         lease) and marks it once its email is sent: a second
#                                         run finds none left; a send cut off by a dead worker
#                                         is sent again once its lease lapses (at least once)
# analytics.tasks.
#   analytics_rollup_all       analytics  it only queues the one below, per project
#   analytics_rollup_project   analytics  it recomputes days from the sources and upserts them:
#                                         the same rows again (two at once are expected)
# gitintegration.tasks.
#   repository_sync_task       git        it holds the repository's lock (cluster and mirror);
#                                         a second sync finds nothing new
#   repositories_sync_all      git        it queues the above, and removes the mirrors of
#                                         deleted repositories under the same lock
#   repositories_sweep         git        it takes each stuck repository with a conditional
#                                         UPDATE (a lease) before it queues its sync
# comments.tasks.
#   mentions_sweep             email      it only queues mentions_notify, which emails once
# transfer.tasks.
#   export_build               exports    it claims the export with a conditional UPDATE (a
#                                         lease): a second run finds it taken, or finished;
#                                         one cut off by a dead worker builds it again once
#                                         its lease lapses, into a file of a new name
#   exports_sweep              exports    it deletes expired exports by age (file, then row)
#                                         and queues export_build again for exports whose
#                                         task was lost; the claim above keeps one build
#
# A task taken by a worker that is killed is lost on the embedded default's broker (kombu's
# filesystem transport deletes a message as it hands it over); with Redis it comes back after
# the visibility timeout. Either way, what it left undone is driven again by:
#   event_fanout, webhook_deliver   deliveries_sweep (beat): events not dispatched, deliveries
#                                   due whose lease (claimed_until) has lapsed
#   repository_sync_task            repositories_sweep (beat): pending/syncing for longer than
#                                   GIT_SYNC_STUCK_SECONDS; and repositories_sync_all
#   mentions_notify                 mentions_sweep (beat): mentions not emailed after
#                                   MENTIONS_SWEEP_GRACE_SECONDS
#   export_build                    exports_sweep (beat): exports pending for longer than
#                                   EXPORT_SWEEP_GRACE_SECONDS, or running past their lease
#   analytics_rollup_project        analytics_rollup_all's next run (beat) recomputes them
#   every periodic task             its own next run (beat)
#   invitation_send_email           invitations_email_sweep (beat): pending invitations whose
#                                   email is still queued INVITATION_EMAIL_SWEEP_GRACE_SECONDS
#                                   after it was handed over get a new token and are sent again
#   webhook_disabled_notify         deliveries_sweep (beat): webhooks switched off for failing
#                                   whose email has not gone out (disabled_notified_at) and
#                                   was handed over WEBHOOK_DISABLED_NOTIFY_GRACE_SECONDS ago
# Mention emails not sent this long after the comment are queued again, every
# MENTIONS_SWEEP_SECONDS (comments.services.mentions_sweep).
MENTIONS_SWEEP_SECONDS = env.float("MENTIONS_SWEEP_SECONDS", default=60.0)
# Whether an @mention of a service account's handle notifies it (comments.selectors): off, a
# program's handle in a comment is text.
MENTION_SERVICE_ACCOUNTS = env.bool("MENTION_SERVICE_ACCOUNTS", default=False)
MENTIONS_SWEEP_GRACE_SECONDS = env.float("MENTIONS_SWEEP_GRACE_SECONDS", default=300.0)
# The same for invitation emails; the grace outlasts the send's own retries (at most 16 minutes).
INVITATION_EMAIL_SWEEP_SECONDS = env.float("INVITATION_EMAIL_SWEEP_SECONDS", default=300.0)
INVITATION_EMAIL_SWEEP_GRACE_SECONDS = env.float(
    "INVITATION_EMAIL_SWEEP_GRACE_SECONDS", default=3600.0
)
# Workspace exports over HTTP (transfer/, docs/operations/backups-and-moving-data.md). The
# archives are kept in the "exports" storage: a folder (EXPORT_DIR; on several nodes, one that
# every node mounts) or, with EXPORT_STORAGE=s3, an S3-compatible bucket through
# django-storages. Its credentials are boto3's own: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY
# from the environment, or an instance or pod role; never read here.
EXPORT_RETENTION_DAYS = env.int("EXPORT_RETENTION_DAYS", default=7)
EXPORT_STORAGE = env.str("EXPORT_STORAGE", default="filesystem")
EXPORT_DIR = Path(env.str("EXPORT_DIR", default=str(DATA_DIR / "exports")))
# Where the worker writes an archive before handing it to the storage (default: the system's).
EXPORT_TEMP_DIR = env.str("EXPORT_TEMP_DIR", default="") or None
# The longest one export may build (the exports queue's soft time limit); its worker holds the
# export this long plus a margin (its lease) before the sweep may hand it to another.
EXPORT_TIME_LIMIT_SECONDS = env.int("EXPORT_TIME_LIMIT_SECONDS", default=3600)
EXPORT_SWEEP_SECONDS = env.float("EXPORT_SWEEP_SECONDS", default=600.0)
EXPORT_SWEEP_GRACE_SECONDS = env.float("EXPORT_SWEEP_GRACE_SECONDS", default=900.0)
if EXPORT_STORAGE == "filesystem":
    _exports_storage: dict = {
        "BACKEND": "django.core.files.storage.FileSystemStorage",
        # Archives are never served as static files: no URL, and owner-only permissions.
        "OPTIONS": {
            "location": str(EXPORT_DIR),
            "base_url": None,
            "file_permissions_mode": 0o600,
            "directory_permissions_mode": 0o700,
        },
    }
elif EXPORT_STORAGE == "s3":
    _exports_storage = {
        "BACKEND": "storages.backends.s3.S3Storage",
        "OPTIONS": {
            "bucket_name": env.str("AWS_STORAGE_BUCKET_NAME"),
            "location": env.str("AWS_LOCATION", default="exports"),
            "endpoint_url": env.str("AWS_S3_ENDPOINT_URL", default="") or None,
            "region_name": env.str("AWS_S3_REGION_NAME", default="") or None,
            "default_acl": None,
            "file_overwrite": False,
        },
    }
else:
    raise ImproperlyConfigured(f"EXPORT_STORAGE must be filesystem or s3, not {EXPORT_STORAGE!r}.")
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
    "exports": _exports_storage,
}

CELERY_TASK_DEFAULT_QUEUE = "default"
CELERY_TASK_QUEUES = {
    name: {"exchange": name, "routing_key": name}
    for name in ("default", "webhooks", "git", "analytics", "email", "exports")
}
CELERY_TASK_ROUTES = {
    "notifications.tasks.event_fanout": {"queue": "webhooks"},
    "notifications.tasks.webhook_deliver": {"queue": "webhooks"},
    "notifications.tasks.deliveries_sweep": {"queue": "webhooks"},
    "notifications.tasks.webhook_disabled_notify": {"queue": "email"},
    "events.tasks.events_purge": {"queue": "default"},
    "accounts.tasks.invitation_send_email": {"queue": "email"},
    "comments.tasks.mentions_notify": {"queue": "email"},
    "comments.tasks.mentions_sweep": {"queue": "email"},
    "accounts.tasks.invitations_email_sweep": {"queue": "email"},
    "ratelimits.tasks.rate_limit_counters_purge": {"queue": "default"},
    "accounts.tasks.denied_tokens_purge": {"queue": "default"},
    "issues.tasks.facet_counts_compact": {"queue": "default"},
    "analytics.tasks.analytics_rollup_all": {"queue": "analytics"},
    "analytics.tasks.analytics_rollup_project": {"queue": "analytics"},
    "gitintegration.tasks.repository_sync_task": {"queue": "git"},
    "gitintegration.tasks.repositories_sync_all": {"queue": "git"},
    "gitintegration.tasks.repositories_sweep": {"queue": "git"},
    "transfer.tasks.export_build": {"queue": "exports"},
    "transfer.tasks.exports_sweep": {"queue": "exports"},
}
# Time limits (prefork pool): at the soft limit the task gets SoftTimeLimitExceeded (its open
# transaction rolls back), a minute later its process is killed: a hung call (an SMTP server
# that never answers) cannot hold a worker for good. Git tasks may first wait for
# the repository's lock (held at most GIT_TIMEOUT_SECONDS * 4 + 30 s), then fetch, ask for the
# origin's HEAD and read new history (up to GIT_TIMEOUT_SECONDS * 4): twelve git timeouts
# leave room for all of it, so git's own timeouts fire first. A full analytics recount of a
# large project is the longest of the rest, but for a workspace's export (EXPORT_TIME_LIMIT).
CELERY_TASK_SOFT_TIME_LIMIT = env.int("CELERY_TASK_SOFT_TIME_LIMIT", default=900)
CELERY_TASK_TIME_LIMIT = CELERY_TASK_SOFT_TIME_LIMIT + 60
_soft_limits_by_queue = {
    "git": GIT_TIMEOUT_SECONDS * 12 + 60,
    "analytics": env.int("ANALYTICS_TASK_SOFT_TIME_LIMIT", default=1800),
    "exports": EXPORT_TIME_LIMIT_SECONDS,
}
CELERY_TASK_ANNOTATIONS = {
    name: {
        "soft_time_limit": _soft_limits_by_queue[route["queue"]],
        "time_limit": _soft_limits_by_queue[route["queue"]] + 60,
    }
    for name, route in CELERY_TASK_ROUTES.items()
    if route["queue"] in _soft_limits_by_queue
}
# The longest wait a task is queued with: webhook retries (WEBHOOK_COUNTDOWN_MAX_SECONDS), and
# the emails' automatic retries (Celery's retry_backoff_max, 600 s).
_longest_countdown = max(WEBHOOK_COUNTDOWN_MAX_SECONDS, 600.0)
_longest_run = max(
    CELERY_TASK_TIME_LIMIT, *(limits["time_limit"] for limits in CELERY_TASK_ANNOTATIONS.values())
)
if REDIS_URL:
    CELERY_BROKER_URL = REDIS_URL
    CELERY_RESULT_BACKEND = REDIS_URL
    # A worker holds a message unacknowledged from the moment it takes it (a countdown is
    # waited out in the worker) until its task ends; Redis hands it to another worker once
    # this timeout passes, so it exceeds the longest countdown plus the longest run. Retries
    # due later wait on their delivery row for the sweeper, not in the broker.
    CELERY_BROKER_TRANSPORT_OPTIONS: dict = {
        "visibility_timeout": max(3600, int(_longest_countdown + _longest_run + 300))
    }
else:
    _queue_dir = DATA_DIR / "celery-queue"
    _queue_dir.mkdir(parents=True, exist_ok=True)
    CELERY_BROKER_URL = "filesystem://localhost/"
    # kombu's filesystem transport with messages written whole (collab/filebroker.py).
    CELERY_BROKER_TRANSPORT = "collab.filebroker:Transport"
    CELERY_RESULT_BACKEND = None
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(_queue_dir),
        "data_folder_out": str(_queue_dir),
        "processed_folder": str(DATA_DIR / "celery-processed"),
        "control_folder": str(DATA_DIR / "celery-control"),
        "store_processed": False,
        # How long the worker sleeps when it takes nothing: when the queues are empty, and
        # also whenever it holds its prefetch of tasks (kombu's default of 1 s capped the
        # embedded worker at about two tasks a second, so a flood queued for minutes).
        "polling_interval": env.float("CELERY_BROKER_POLLING_SECONDS", default=0.05),
    }
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_ALWAYS_EAGER = False
# Exactly one beat sends in a cluster (collab/beat.py): with Redis, every beat process takes a
# lock first; the others stand by, and one takes over within about the lock's TTL once the
# holder is gone. Without Redis it is celery's PersistentScheduler, as on one machine.
CELERY_BEAT_SCHEDULER = "collab.beat:LockedScheduler"
CELERY_BEAT_LOCK_TTL_SECONDS = env.float("CELERY_BEAT_LOCK_TTL_SECONDS", default=30.0)
CELERY_BEAT_SCHEDULE_FILENAME = str(DATA_DIR / "celerybeat-schedule")
# Each entry goes to its task's queue (CELERY_TASK_ROUTES).
CELERY_BEAT_SCHEDULE: dict = {
    "webhook-deliveries-sweep": {
        "task": "notifications.tasks.deliveries_sweep",
        "schedule": WEBHOOK_SWEEP_SECONDS,
    },
    "events-purge": {"task": "events.tasks.events_purge", "schedule": 24 * 3600.0},
    "rate-limit-counters-purge": {
        "task": "ratelimits.tasks.rate_limit_counters_purge",
        "schedule": 3600.0,
    },
    "denied-tokens-purge": {"task": "accounts.tasks.denied_tokens_purge", "schedule": 3600.0},
    # The filtered lists' counters: each key's change rows folded into one (issues.facets).
    "issue-facet-counts-compact": {
        "task": "issues.tasks.facet_counts_compact",
        "schedule": float(env.int("ISSUE_FACET_COMPACT_SECONDS", default=60)),
    },
    # Analytics: yesterday's rollups (and late commits) soon after midnight and through the
    # day; a full recount nightly forgets what deleted issues and repositories left behind.
    "analytics-rollup": {
        "task": "analytics.tasks.analytics_rollup_all",
        "schedule": float(env.int("ANALYTICS_ROLLUP_INTERVAL_SECONDS", default=600)),
    },
    "analytics-rollup-full": {
        "task": "analytics.tasks.analytics_rollup_all",
        "schedule": 86400.0,
        "kwargs": {"full": True},
    },
    "git-repositories-sync": {
        "task": "gitintegration.tasks.repositories_sync_all",
        "schedule": float(GIT_SYNC_INTERVAL_SECONDS),
    },
    # What a worker killed mid-task left undone (the file broker drops the task it held).
    "git-repositories-sweep": {
        "task": "gitintegration.tasks.repositories_sweep",
        "schedule": GIT_SYNC_SWEEP_SECONDS,
    },
    "comment-mentions-sweep": {
        "task": "comments.tasks.mentions_sweep",
        "schedule": MENTIONS_SWEEP_SECONDS,
    },
    "invitation-emails-sweep": {
        "task": "accounts.tasks.invitations_email_sweep",
        "schedule": INVITATION_EMAIL_SWEEP_SECONDS,
    },
    # Expired exports purged (file and row); exports whose task was lost queued again.
    "exports-sweep": {"task": "transfer.tasks.exports_sweep", "schedule": EXPORT_SWEEP_SECONDS},
}
CELERY_TIMEZONE = "UTC"
# A broker that is down must not hold a request for long: the sweeper covers what fails here.
CELERY_TASK_PUBLISH_RETRY_POLICY = {
    "max_retries": 2,
    "interval_start": 0,
    "interval_step": 0.2,
    "interval_max": 0.5,
}
CELERY_BROKER_CONNECTION_TIMEOUT = 2.0

# Analytics ----------------------------------------------------------------------------------
# Projects with more issues than this get their breakdowns from a snapshot the rollup job
# stores, instead of grouping every issue on each dashboard request.
ANALYTICS_LIVE_BREAKDOWN_MAX_ISSUES = env.int("ANALYTICS_LIVE_BREAKDOWN_MAX_ISSUES", default=5000)
# Each rollup also stores today up to this many seconds ago, so a request counts live only
# what is newer (and the margin leaves out what a still-open transaction may yet commit).
ANALYTICS_PARTIAL_DAY_MARGIN_SECONDS = env.int("ANALYTICS_PARTIAL_DAY_MARGIN_SECONDS", default=300)
# Rows fetched per query (and label lookups batched) while a report streams.
ANALYTICS_REPORT_CHUNK_SIZE = env.int("ANALYTICS_REPORT_CHUNK_SIZE", default=2000)

# Prometheus metrics (docs/operations/metrics.md). GET /metrics on the web port: with a token,
# to a request bearing it; without one, to loopback and these networks only (no default token).
METRICS_ENABLED = env.bool("METRICS_ENABLED", default=True)
METRICS_TOKEN = env.str("METRICS_TOKEN", default="")
METRICS_ALLOWED_NETWORKS = []
for _network in env.list("METRICS_ALLOWED_NETWORKS", default=[]):
    try:
        METRICS_ALLOWED_NETWORKS.append(ip_network(_network.strip(), strict=False))
    except ValueError as exc:
        raise ImproperlyConfigured(f"METRICS_ALLOWED_NETWORKS: {exc}") from None
# A Celery worker (or beat) serves its metrics over HTTP on this port; empty: none.
_worker_metrics_port = env.str("WORKER_METRICS_PORT", default="").strip()
if _worker_metrics_port and not _worker_metrics_port.isdigit():
    raise ImproperlyConfigured(f"WORKER_METRICS_PORT: not a port: {_worker_metrics_port!r}")
WORKER_METRICS_PORT = int(_worker_metrics_port) if _worker_metrics_port else None
# Where each server's processes keep their metric files, a directory per server beneath it
# (collab/metricsdir.py reads it as the servers start, before Django).
PROMETHEUS_MULTIPROC_DIR = env.str("PROMETHEUS_MULTIPROC_DIR", default=str(DATA_DIR / "prometheus"))


# One line per event on stderr, through collab.logs: readable lines on the console (the
# default, what ./run shows), or one JSON object per line (LOG_FORMAT=json, what the image and
# the manifests set) with secrets redacted in either (docs/operations/logs-and-traces.md).
LOG_FORMAT = env.str("LOG_FORMAT", default="console")
if LOG_FORMAT not in LOG_FORMATS:
    raise ImproperlyConfigured(f"LOG_FORMAT must be one of {', '.join(LOG_FORMATS)}.")
LOGGING = logging_config(log_format=LOG_FORMAT, level=env.str("LOG_LEVEL", default="INFO"))
configure_structlog()
