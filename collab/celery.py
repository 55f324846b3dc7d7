import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "collab.settings.local")

app = Celery("collab")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

# The service's logging and a line per task run (collab/tasklog.py), and tracing where the
# OTEL_* variables ask for it (collab/tracing.py).
import collab.tasklog  # noqa: E402, F401
import collab.tracing  # noqa: E402, F401

# Task metrics and the worker's metrics server, on Celery's signals.
from collab import taskmetrics  # noqa: E402, F401
