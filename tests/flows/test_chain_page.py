"""The chain page, round 2: seq-ordered raw column, events table, downloads, view history and summarizer calls."""
from __future__ import annotations

import re

import pytest

from flows.models import ChainView
from tests.flows.conftest import call

pytestmark = pytest.mark.django_db


@pytest.fixture
def qa_chain(make_chain):
    """Two user questions with tool work between them; the view merged both questions into the first section."""
    chain = make_chain([
        {"role": "system", "content": "You are a pentester."},
        {"role": "user", "content": "scan 10.10.5.23"},
        {"role": "assistant", "content": None, "tool_calls": [call("call_aaaaaaaaaaaaaaaaaaaaaaaa", "nmap")]},
        {"role": "tool", "tool_call_id": "call_aaaaaaaaaaaaaaaaaaaaaaaa", "content": "22/tcp open"},
        {"role": "assistant", "content": "ssh is open"},
        {"role": "user", "content": "now try the web port"},
        {"role": "assistant", "content": "port 80 is closed"},
    ])
    ChainView.objects.create(chain=chain, version=1, messages=[
        {"role": "system", "content": "You are a pentester."},
        {"role": "user", "content": "scan 10.10.5.23\n\nnow try the web port"},
        {"role": "assistant", "content": "ssh is open"},
        {"role": "assistant", "content": "port 80 is closed"},
    ], lineage=[[1], [2, 6], [3, 4, 5], [7]], raw_seq_to=7, byte_size=200, token_count=60)
    return chain


def _raw_seqs(body: str) -> list[int]:
    return [int(s) for s in re.findall(r'<li class="msg[^"]*" id="m-(\d+)"', body)]


def test_the_raw_column_reads_in_seq_order_whatever_the_view_merged(client_for, qa_chain):
    body = client_for.get(f"/chains/{qa_chain.pk}/").content.decode()
    assert _raw_seqs(body) == [1, 2, 3, 4, 5, 6, 7]


def test_each_view_item_sits_beside_the_first_raw_message_it_covers(client_for, qa_chain):
    body = client_for.get(f"/chains/{qa_chain.pk}/").content.decode()
    bands = re.findall(r'<div class="band band-.*?(?=<div class="band band-|<div class="section-divider"|$)', body,
                       flags=re.S)
    firsts = {}
    for band in bands:
        raws = _raw_seqs(band)
        for index in re.findall(r'<article class="vmsg[^"]*" id="v-(\d+)"', band):
            firsts[int(index)] = raws[0]
    assert firsts == {0: 1, 1: 2, 2: 3, 3: 7}


def test_no_pending_band_is_shown_when_the_view_covers_everything(client_for, qa_chain):
    body = client_for.get(f"/chains/{qa_chain.pk}/").content.decode()
    band = re.search(r'<div class="band band-pending"[^>]*>', body)
    assert band is not None and "hidden" in band.group(0)
