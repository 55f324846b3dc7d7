"""How the project's servers run: the uvicorn worker class gunicorn starts.

uvicorn trusts ``X-Forwarded-For`` and ``X-Forwarded-Proto`` from loopback by default and
rewrites the client address before Django sees it, so behind a same-host proxy (or with none)
any caller could pick the address its rate limit and login lockout count against. The
service decides which forwarded hops to believe itself (``RATE_LIMIT_TRUSTED_PROXIES``,
``collab.api.ratelimit.client_address``); the server passes the socket's address on unchanged.

What the application's imports made lives as long as the worker, so it is moved out of the
cyclic collector's sight before the first request: a full collection then walks only what
requests and open streams hold. With 1,000 streams open a full collection paused the process
for about 90 ms, two thirds of it on those imports; every stream's frames waited meanwhile.

Each connection runs ``collab.http_protocol.BoundedHttpToolsProtocol``: uvicorn's own httptools
protocol with a bounded request head (size, fields, time) and a strict Transfer-Encoding,
none of which uvicorn nor gunicorn's ``limit_request_*`` apply to this worker.
"""

import gc

from uvicorn_worker import UvicornWorker as _UvicornWorker

from collab.http_protocol import BoundedHttpToolsProtocol


class UvicornWorker(_UvicornWorker):
    CONFIG_KWARGS = {
        **_UvicornWorker.CONFIG_KWARGS,
        "proxy_headers": False,
        "http": BoundedHttpToolsProtocol,
    }

    def run(self) -> None:
        gc.collect()
        gc.freeze()
        super().run()
