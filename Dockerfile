# syntax=docker/dockerfile:1
# The one image of Collab: docker-compose.yml runs web (gunicorn), worker and beat (Celery)
# from it, with collab.settings.production. Build: docker build -t collab .
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    DJANGO_SETTINGS_MODULE=collab.settings.production \
    COLLAB_DATA_DIR=/app/var \
    LOG_FORMAT=json \
    PORT=8000

# git: repositories are fetched, synced and merged with the real git (docs/guide/git-integration.md).
RUN apt-get update \
    && apt-get install --yes --no-install-recommends git \
    && rm -rf /var/lib/apt/lists/*

RUN groupadd --system --gid 10001 collab \
    && useradd --system --uid 10001 --gid collab --home-dir /app --shell /usr/sbin/nologin collab

WORKDIR /app

# Dependencies first, so a code change does not reinstall them.
COPY requirements.txt .
RUN pip install --requirement requirements.txt

# The code stays owned by root: the service can write only to its data directory.
COPY . .
# Production settings need a SECRET_KEY even to collect static files; this one is used for
# nothing else and never reaches a running container.
RUN SECRET_KEY=collectstatic-only-not-a-runtime-secret python manage.py collectstatic --noinput \
    && mkdir -p /app/var/git /app/var/exports \
    && chown -R collab:collab /app/var

USER collab

EXPOSE 8000

# Probes GET /healthz with a Host header the service accepts (scripts/healthcheck.py).
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
    CMD ["python", "scripts/healthcheck.py"]

CMD ["sh", "-c", "exec gunicorn collab.asgi --bind 0.0.0.0:${PORT} --workers 3 --worker-class collab.serving.UvicornWorker --worker-tmp-dir /dev/shm --config python:collab.gunicorn_conf --log-level warning"]
