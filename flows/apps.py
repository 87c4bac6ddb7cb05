from django.apps import AppConfig


class FlowsConfig(AppConfig):
    name = "flows"
    verbose_name = "Flows, chains and context settings"
    default_auto_field = "django.db.models.BigAutoField"
