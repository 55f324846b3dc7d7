"""What the pages checked in a real browser share."""

import pytest

from tests.browser.chromium import Chromium, executable


@pytest.fixture
def browser(tmp_path):
    """Headless Chromium with a profile of its own (here, not the admin's test client that
    ``browser`` is elsewhere)."""
    if executable() is None:
        pytest.skip("Chromium is not installed (apt-get install chromium)")
    chromium = Chromium(str(tmp_path / "profile"))
    yield chromium
    chromium.close()
