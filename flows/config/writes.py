"""Writes to the summarizer settings. Every change goes through `settings_update`, which records who changed
what and when (a SettingsChange row with {field: [old, new]}), whether it came from the admin, a page, the API
or an environment import."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction

from flows.config.registry import env_import_plan, settings_for, settings_validate, settings_values
from flows.core import PROFILES
from flows.models import Flow, SettingsChange, SummarizerSettings

__all__ = ["settings_create", "settings_update", "settings_override_for", "settings_save", "settings_import_env",
           "EnvImportReport"]


def _label(row: SummarizerSettings) -> str:
    return f"{row.profile} (flow #{row.flow_id})" if row.flow_id else f"{row.profile} (defaults)"


def settings_update(*, row: SummarizerSettings, data: Mapping[str, Any], user=None,
                    source: str = "admin") -> SettingsChange | None:
    """Validate `data` against the row, save what changed and log it; None when nothing changed."""
    cleaned = settings_validate(data, base=row)
    with transaction.atomic():
        locked = SummarizerSettings.objects.select_for_update().get(pk=row.pk)
        before = settings_values(locked)
        changes = {name: [before[name], value] for name, value in cleaned.items() if before[name] != value}
        if not changes:
            return None
        for name, (_, value) in changes.items():
            setattr(locked, name, value)
        locked.updated_by = user if getattr(user, "pk", None) else None
        locked.save()
        for name, (_, value) in changes.items():
            setattr(row, name, value)
        return SettingsChange.objects.create(settings=locked, label=_label(locked), user=locked.updated_by,
                                             source=source[:32], changes=changes)


def _record_created(row: SummarizerSettings, *, user, source: str) -> SettingsChange:
    return SettingsChange.objects.create(settings=row, label=_label(row), user=user if getattr(user, "pk", None)
                                         else None, source=source[:32], changes={})


def settings_create(*, row: SummarizerSettings, user=None, source: str = "admin") -> SummarizerSettings:
    """Save a new settings row (the admin's add form) and record its creation in the change history."""
    with transaction.atomic():
        row.updated_by = user if getattr(user, "pk", None) else None
        row.save()
        _record_created(row, user=user, source=source)
    return row


def settings_override_for(*, flow: Flow, profile: str, user=None) -> SummarizerSettings:
    """The flow's own settings row, created as a copy of the profile's defaults when it has none yet."""
    existing = SummarizerSettings.objects.filter(profile=profile, flow=flow).first()
    if existing is not None:
        return existing
    values = settings_values(settings_for(profile=profile))
    with transaction.atomic():
        row, created = SummarizerSettings.objects.get_or_create(profile=profile, flow=flow, defaults=values)
        if created:
            _record_created(row, user=user, source="override")
    return row


def settings_save(*, profile: str, flow: Flow | None, data: Mapping[str, Any], user=None,
                  source: str) -> tuple[SummarizerSettings, SettingsChange | None]:
    """Apply `data` to the flow's override (created on its first save) or, without a flow, the profile's defaults.

    Validated before anything is written and atomic, so a refused change leaves no fresh override row behind.
    Who may change the defaults is the caller's decision (pages and API allow staff only).
    """
    settings_validate(data, base=settings_for(profile=profile, flow=flow), profile=profile)
    with transaction.atomic():
        row = settings_override_for(flow=flow, profile=profile, user=user) if flow is not None else \
            settings_for(profile=profile)
        change = settings_update(row=row, data=data, user=user, source=source)
    return row, change


@dataclass
class EnvImportReport:
    """An environment import: {profile: {field: [old, new]}} saved, and {variable: reason} refused."""

    applied: dict[str, dict[str, list[Any]]] = field(default_factory=dict)
    rejected: dict[str, str] = field(default_factory=dict)

    @property
    def changed(self) -> int:
        return sum(len(changes) for changes in self.applied.values())

    def summary(self) -> str:
        """One line naming what was saved, for a page message or a command's output."""
        parts = [f"{profile}: " + ", ".join(f"{name}={new!r}" for name, (_old, new) in changes.items())
                 for profile, changes in self.applied.items() if changes]
        saved = f"Imported {self.changed} setting(s) ({'; '.join(parts)})" if parts else "No setting changed"
        refused = f"; {len(self.rejected)} variable(s) refused" if self.rejected else ""
        return saved + refused + "."


def settings_import_env(environ: Mapping[str, str], *, user: Any = None) -> EnvImportReport:
    """Apply SUMMARIZER_* / ASSISTANT_SUMMARIZER_* / COMPACTION_* / ASSISTANT_COMPACTION_* variables to both
    profiles' defaults. Each variable is validated on its own: the good ones are saved (with change history),
    each bad one is reported by name with its reason and changes nothing."""
    report = EnvImportReport()
    with transaction.atomic():
        for profile in PROFILES:
            row = SummarizerSettings.objects.select_for_update().get(pk=settings_for(profile=profile).pk)
            plan = env_import_plan(profile, environ, settings_values(row))
            report.rejected.update(plan.rejected)
            change = settings_update(row=row, data=plan.accepted, user=user, source="env import")
            report.applied[profile] = change.changes if change else {}
    return report
