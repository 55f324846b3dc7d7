import pytest


@pytest.fixture(autouse=True)
def _exports_here(exports_storage):
    """Every test of exports keeps its archives in a folder of its own."""
    return exports_storage
