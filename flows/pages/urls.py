"""Page routes (included by flows/urls.py at the site root)."""
from django.urls import path

from flows.pages import chain, chain_extras, compact, flow_detail, flows_list, providers, settings_page, upload

urlpatterns = [
    path("", flows_list.flows_list_page, name="flows-list"),
    path("flows/<int:flow_id>/", flow_detail.flow_page, name="flow-detail"),
    path("flows/upload/", upload.upload_page, name="flow-upload"),
    path("flows/<int:flow_id>/timeline/", flow_detail.flow_timeline_fragment, name="flow-timeline"),
    path("flows/<int:flow_id>/agents/", flow_detail.flow_agents_fragment, name="flow-agents"),
    path("chains/<int:chain_id>/", chain.chain_page, name="chain-detail"),
    path("chains/<int:chain_id>/view-panel/", chain.chain_view_panel, name="chain-view-panel"),
    path("chains/<int:chain_id>/messages/<int:seq>.txt", chain.chain_message_text, name="chain-message-text"),
    path("chains/<int:chain_id>/download/<str:fmt>/", chain_extras.chain_download, name="chain-download"),
    path("chains/<int:chain_id>/events/<int:event_id>/", chain_extras.chain_event_page, name="chain-event"),
    path("chains/<int:chain_id>/views/", chain_extras.chain_views_page, name="chain-views"),
    path("chains/<int:chain_id>/compact/", compact.chain_compact_page, name="chain-compact"),
    path("chains/<int:chain_id>/compact/preview/", compact.chain_dry_run_page, name="chain-compact-preview"),
    path("settings/", settings_page.settings_page, name="settings"),
    path("settings/export.env", settings_page.settings_export, name="settings-export"),
    path("settings/import-env/", settings_page.settings_import, name="settings-import"),
    path("providers/", providers.providers_page, name="providers"),
    path("providers/new/", providers.provider_edit_page, name="provider-new"),
    path("providers/<int:provider_id>/", providers.provider_edit_page, name="provider-edit"),
    path("providers/<int:provider_id>/test/", providers.provider_test, name="provider-test"),
    path("providers/<int:provider_id>/delete/", providers.provider_delete, name="provider-delete"),
]
