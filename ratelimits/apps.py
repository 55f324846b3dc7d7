from django.apps import AppConfig


class RatelimitsConfig(AppConfig):
    name = "ratelimits"
    verbose_name = "Rate-limit counters"
