"""The ASGI application that production, compose and ./run serve (gunicorn + uvicorn workers).

Two doors into one Django project:

- ``/v1/events/stream`` goes to Django's ASGI handler: each open stream is a coroutine on the
  process's event loop, so one process holds thousands of them;
- every other request goes to Django's WSGI handler on a fixed pool of threads (a2wsgi). The
  REST endpoints are synchronous code; Django's ASGI handler would run each request in a new
  thread of its own, which was measured at about 0.75 of the throughput of gunicorn's threaded
  WSGI workers, and at 0.45 with connections kept per thread. On a pool of long-lived
  threads they run as under gunicorn's threads, keeping their database connections.
"""

import os

from a2wsgi import WSGIMiddleware
from django.core.asgi import get_asgi_application
from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "collab.settings.local")

django_asgi = get_asgi_application()
django_wsgi = WSGIMiddleware(
    get_wsgi_application(), workers=int(os.environ.get("WEB_THREADS", "8"))
)
ASYNC_PATHS = frozenset({"/v1/events/stream"})


async def application(scope, receive, send):
    if scope["type"] == "http" and scope["path"] not in ASYNC_PATHS:
        await django_wsgi(scope, receive, send)
    else:
        await django_asgi(scope, receive, send)
