import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "collab.settings.local")

app = Celery("collab")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

# Task metrics and the worker's metrics server, on Celery's signals.
from collab import taskmetrics  # noqa: E402, F401
