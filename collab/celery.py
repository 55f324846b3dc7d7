import os
import sys

from celery import Celery

from collab import metricsdir

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "collab.settings.local")
# A worker's or beat's metrics directory is set before anything imports a metric.
metricsdir.celery_directory_early(sys.argv)

app = Celery("collab")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

# The service's logging and a line per task run (collab/tasklog.py), and tracing where the
# OTEL_* variables ask for it (collab/tracing.py).
import collab.tasklog  # noqa: E402, F401
import collab.tracing  # noqa: E402, F401

# Task metrics and the worker's metrics server, on Celery's signals.
from collab import taskmetrics  # noqa: E402, F401
