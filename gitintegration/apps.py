from django.apps import AppConfig


class GitintegrationConfig(AppConfig):
    name = "gitintegration"
