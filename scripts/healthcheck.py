"""Container health probe: exits 0 when GET /healthz answers 200, 1 otherwise.

Used by the Dockerfile's HEALTHCHECK and docker-compose.yml. Django refuses a Host header
that is not in ALLOWED_HOSTS, and a probe from inside the container has no public name, so
it sends the first name the service accepts.
"""

import os
import sys
import urllib.request


def probe_host() -> str:
    names = [name.strip() for name in os.environ.get("ALLOWED_HOSTS", "").split(",")]
    for name in names:
        if name and name != "*":
            return name.lstrip(".")  # ".example.com" allows example.com itself
    return "localhost"


def main() -> int:
    url = f"http://127.0.0.1:{os.environ.get('PORT', '8000')}/healthz"
    request = urllib.request.Request(url, headers={"Host": probe_host()})  # noqa: S310
    try:
        with urllib.request.urlopen(request, timeout=4) as response:  # noqa: S310
            return 0 if response.status == 200 else 1
    except OSError as exc:
        print(f"healthcheck: {url}: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
