"""The NUL-safe JSON codec skips its walk only where the walk changes nothing (flows/models/fields.py).

Encoding and decoding must give exactly what escaping every string (the walk) gives, for any value: NUL and the
escape character literal, as \\u escapes, in keys, beside look-alike text (a backslash then "u0000"), nested.
"""
from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flows.models import Message
from flows.models.fields import ESCAPE, NulSafeJSONDecoder, NulSafeJSONEncoder, escape_nul, unescape_nul

pytestmark = pytest.mark.django_db

TRICKY = ["\x00", ESCAPE, ESCAPE + "0", ESCAPE + "e", "\\u0000", "\\udb80\\udc00", "\\uDB80", "\U000f0001", "a", " "]
text = st.lists(st.sampled_from(TRICKY) | st.text(st.characters(blacklist_categories=("Cs",)), max_size=5),
                max_size=6).map("".join)
value = st.recursive(st.none() | st.booleans() | st.integers() | text,
                     lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text, inner, max_size=3),
                     max_leaves=10)


def _walked_dumps(o: Any, **kwargs: Any) -> str:
    return json.dumps(escape_nul(o), **kwargs)


@settings(max_examples=300, deadline=None)
@given(o=value, ascii_only=st.booleans())
def test_encoding_is_the_walked_encoding(o, ascii_only):
    assert json.dumps(o, cls=NulSafeJSONEncoder, ensure_ascii=ascii_only) == _walked_dumps(o, ensure_ascii=ascii_only)


@settings(max_examples=300, deadline=None)
@given(o=value, ascii_only=st.booleans(), escaped=st.booleans())
def test_decoding_is_the_walked_decoding(o, ascii_only, escaped):
    stored = _walked_dumps(o, ensure_ascii=ascii_only) if escaped else json.dumps(o, ensure_ascii=ascii_only)
    assert json.loads(stored, cls=NulSafeJSONDecoder) == unescape_nul(json.loads(stored))
    if escaped:
        assert json.loads(stored, cls=NulSafeJSONDecoder) == o


def test_a_message_with_escape_look_alikes_reads_back_exactly(make_chain):
    content = {"text": "a\\u0000b \\udb80\\udc00", "nul": "x\x00y", ESCAPE: [ESCAPE + "0", "\x00" + ESCAPE]}
    chain = make_chain(messages=[{"role": "user", "content": "task"}])
    Message.objects.create(chain=chain, seq=2, role="user", content=content, extra={"k\x00": "v"})
    stored = Message.objects.get(chain=chain, seq=2)
    assert stored.content == content and stored.extra == {"k\x00": "v"}
