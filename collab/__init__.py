# The one version of the service: pyproject.toml's, the schema's info.version, /healthz's
# data.version and CHANGELOG.md's newest release agree with it (tests/docs/test_version.py).
__version__ = "1.0.0"

from .celery import app as celery_app  # noqa: E402 - the version first, importing nothing

__all__ = ["__version__", "celery_app"]
