"""The app's composition root: Django calls `ready()` once the models are loaded."""
from django.apps import AppConfig


class FlowsConfig(AppConfig):
    name = "flows"
    verbose_name = "Flows, chains and context settings"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Django requires these imports inside ready(): the capabilities' doors load models, which are not
        # loaded when this module is imported.
        from flows import pipeline  # noqa: F401  (its door loads the Celery tasks: registers them by name)
        from flows.config import load_compaction_providers
        from flows.live import connect_session_signals

        # The pipeline queues tasks by name (flows.core.queue); registering them here means every process
        # that can append (web, worker, commands) knows those names.
        # Installed compaction providers are registered in every process that runs the app (web and workers).
        load_compaction_providers()
        connect_session_signals()  # a logout, password change or deactivation closes the user's live sockets
