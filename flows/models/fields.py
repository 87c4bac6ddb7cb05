"""JSON that PostgreSQL can store: jsonb refuses the NUL character (\\u0000), which real tool output contains.

Strings are escaped reversibly on the way in and restored on the way out, on every database, so a chain reads
back exactly as it was written. ESCAPE is a private-use code point; its own occurrences are escaped too.
"""
from __future__ import annotations

import json
import re
from typing import Any

from django.db import models

from flows.core import storable_json, storable_text

__all__ = ["NulSafeJSONEncoder", "NulSafeJSONDecoder", "StorableJSONField", "StorableTextField", "escape_nul",
           "storable_json_field", "storable_text_field", "unescape_nul"]

ESCAPE = "\U000f0000"
_UNESCAPE = re.compile(ESCAPE + "(.)", re.DOTALL)
_RESTORE = {"0": "\x00", "e": ESCAPE}


def _escape_str(text: str) -> str:
    if "\x00" not in text and ESCAPE not in text:
        return text
    return text.replace(ESCAPE, ESCAPE + "e").replace("\x00", ESCAPE + "0")


def _unescape_str(text: str) -> str:
    if ESCAPE not in text:
        return text
    return _UNESCAPE.sub(lambda m: _RESTORE.get(m.group(1), m.group(1)), text)


def _walk(value: Any, fn) -> Any:
    if isinstance(value, str):
        return fn(value)
    if isinstance(value, list):
        return [_walk(v, fn) for v in value]
    if isinstance(value, dict):
        return {fn(k) if isinstance(k, str) else k: _walk(v, fn) for k, v in value.items()}
    return value


def escape_nul(value: Any) -> Any:
    return _walk(value, _escape_str)


def unescape_nul(value: Any) -> Any:
    return _walk(value, _unescape_str)


class NulSafeJSONEncoder(json.JSONEncoder):
    def encode(self, o: Any) -> str:
        return super().encode(escape_nul(o))


class NulSafeJSONDecoder(json.JSONDecoder):
    def decode(self, s: str, *args: Any, **kwargs: Any) -> Any:
        return unescape_nul(super().decode(s, *args, **kwargs))


class StorableTextField(models.TextField):
    """A TextField for text the pipeline writes (summaries, reasons, notes, upstream errors): NUL and lone
    surrogates become U+FFFD on the way in, so a hostile tool output can never make a save fail on PostgreSQL.
    Deconstructs as a plain TextField: no migration, the column is unchanged."""

    def get_prep_value(self, value: Any) -> Any:
        value = super().get_prep_value(value)
        return storable_text(value) if isinstance(value, str) else value

    def deconstruct(self) -> Any:
        name, _, args, kwargs = super().deconstruct()
        return name, "django.db.models.TextField", args, kwargs


class StorableJSONField(models.JSONField):
    """A JSONField for display data derived from messages (section previews and summaries): lossy like
    StorableTextField, where the messages' own columns escape NUL reversibly (NulSafeJSONEncoder)."""

    def get_prep_value(self, value: Any) -> Any:
        return super().get_prep_value(storable_json(value))

    def deconstruct(self) -> Any:
        name, _, args, kwargs = super().deconstruct()
        return name, "django.db.models.JSONField", args, kwargs


def storable_text_field(**options: Any) -> Any:
    """A StorableTextField, typed like Django's own fields (Any) so a model attribute reads as its value."""
    return StorableTextField(**options)


def storable_json_field(**options: Any) -> Any:
    return StorableJSONField(**options)
