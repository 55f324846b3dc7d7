from django.apps import AppConfig


class IntegrationsConfig(AppConfig):
    """The credentials integrations hold: API keys, and what they may reach (projects)."""

    name = "integrations"
