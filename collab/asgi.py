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
_django_wsgi = get_wsgi_application()


def _terminated_input(environ, start_response):
    # a2wsgi's input ends where the request body ends (the ASGI server has decoded any
    # chunking), as gunicorn's own workers promise with this key; without it a chunked body
    # could not be read safely, and the body guard would refuse it (411).
    environ["wsgi.input_terminated"] = True
    return _django_wsgi(environ, start_response)


django_wsgi = WSGIMiddleware(_terminated_input, workers=int(os.environ.get("WEB_THREADS", "8")))
ASYNC_PATHS = frozenset({"/v1/events/stream"})
# Only reads go to the event loop: Django's ASGI handler spools a whole request body before
# routing, so any other method of these paths is answered (405) by the WSGI side instead.
ASYNC_METHODS = frozenset({"GET", "HEAD"})


async def application(scope, receive, send):
    if scope["type"] == "http" and (
        scope["path"] not in ASYNC_PATHS or scope["method"] not in ASYNC_METHODS
    ):
        await django_wsgi(scope, receive, send)
    else:
        await django_asgi(scope, receive, send)
