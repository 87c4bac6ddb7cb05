from django.apps import AppConfig

from flows.plugins import load_compaction_providers


class FlowsConfig(AppConfig):
    name = "flows"
    verbose_name = "Flows, chains and context settings"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Installed compaction providers are registered in every process that runs the app (web and workers).
        load_compaction_providers()
