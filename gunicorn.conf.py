"""gunicorn reads this file from the directory it starts in when no ``--config`` is given (the
tests' and the benchmarks' servers): the same settings and hooks as every other server."""

from collab.gunicorn_conf import *  # noqa: F403
