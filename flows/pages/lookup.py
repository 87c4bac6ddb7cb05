"""The object a page is about, or the page's 404: another user's flow or chain looks absent."""
from __future__ import annotations

from django.http import HttpRequest
from django.shortcuts import get_object_or_404

from flows.models import Chain, Flow, ProviderConfig

__all__ = ["chain_or_404", "flow_or_404", "provider_or_404"]


def chain_or_404(request: HttpRequest, chain_id: int) -> Chain:
    return get_object_or_404(Chain.objects.visible_to(request.user).select_related("agent__flow__owner"),
                             pk=chain_id)


def flow_or_404(request: HttpRequest, flow_id: int) -> Flow:
    return get_object_or_404(Flow.objects.visible_to(request.user).select_related("owner"), pk=flow_id)


def provider_or_404(provider_id: int) -> ProviderConfig:
    """Providers are staff's: the caller has checked `is_staff` already."""
    return get_object_or_404(ProviderConfig, pk=provider_id)
