"""The app's composition root: Django calls `ready()` once the models are loaded."""
from django.apps import AppConfig
from django.db.models.signals import post_delete, post_save

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

        _drop_cached_lookups_on_edits()


def _drop_cached_lookups_on_edits() -> None:
    """Providers (flows.providers) and the gateway's token checks (flows.gateway.routing) are cached per
    process; a provider, token or user saved or deleted here (a user deactivated, say) drops the copy."""
    from django.contrib.auth import get_user_model

    from flows.gateway.routing import tokens_changed
    from flows.models import ApiToken, ProviderConfig
    from flows.providers import providers_changed

    for receiver, sender in ((providers_changed, ProviderConfig), (tokens_changed, ApiToken),
                             (tokens_changed, get_user_model())):
        uid = f"{receiver.__name__}_{sender.__name__}"
        post_save.connect(receiver, sender=sender, dispatch_uid=uid + "_save")
        post_delete.connect(receiver, sender=sender, dispatch_uid=uid + "_delete")
