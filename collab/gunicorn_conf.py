"""gunicorn's settings beyond its command line (``--config python:collab.gunicorn_conf``):
its own lines through the service's logging, and tracing started in each worker after the
fork (collab/tracing.py). Read by gunicorn's master before any Django setting exists."""

import os

from collab.logs import logging_config

logconfig_dict = logging_config(
    log_format=os.environ.get("LOG_FORMAT", "console"),
    level=os.environ.get("LOG_LEVEL", "INFO"),
)


def post_fork(server, worker):
    from collab.tracing import tracing_start

    tracing_start()
