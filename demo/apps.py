from django.apps import AppConfig


class DemoConfig(AppConfig):
    """Demo and benchmark data (``seed_demo``): the top floor, free to use every app."""

    name = "demo"
