"""The app's composition root: Django calls `ready()` once the models are loaded."""
from django.apps import AppConfig

from flows.plugins import load_compaction_providers


class FlowsConfig(AppConfig):
    name = "flows"
    verbose_name = "Flows, chains and context settings"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # The services queue tasks by name (flows.services.queue); registering them here means every process
        # that can append (web, worker, commands) knows those names. Django requires this import inside
        # ready(): the models are not loaded when this module is imported.
        from flows import tasks  # noqa: F401

        # Installed compaction providers are registered in every process that runs the app (web and workers).
        load_compaction_providers()
