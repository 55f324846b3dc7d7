"""Settings for the benchmarks only: production's, plus the bare baseline's route.

The baseline view lives in ``bench/urls.py``; the service's own URLconf never sees it.
"""

import warnings

from collab.settings.production import *  # noqa: F403

ROOT_URLCONF = "bench.urls"

# Static files are not collected for a benchmark; WhiteNoise would warn in every worker.
warnings.filterwarnings("ignore", "No directory at", UserWarning)

# The stream benchmarks hold thousands of streams open on one key.
STREAM_MAX_PER_CREDENTIAL = 10**9
