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


# Where JSON text may hold a NUL or an ESCAPE, literally or as a \u escape (U+F0000 is the pair \udb80\udc00):
# JSON without either decodes to strings without them, and values without them encode to JSON without them, so
# the walk (a call per string, list and dict of a message: a fifth of a worker's view load) changes nothing there.
_MAYBE_ESCAPED = re.compile("\x00|" + ESCAPE + r"|\\u0000|\\u[dD][bB]80", re.IGNORECASE)


class NulSafeJSONEncoder(json.JSONEncoder):
    def encode(self, o: Any) -> str:
        text = super().encode(o)
        return super().encode(escape_nul(o)) if _MAYBE_ESCAPED.search(text) else text


class NulSafeJSONDecoder(json.JSONDecoder):
    def decode(self, s: str, *args: Any, **kwargs: Any) -> Any:
        value = super().decode(s, *args, **kwargs)
        return unescape_nul(value) if _MAYBE_ESCAPED.search(s) else value


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
