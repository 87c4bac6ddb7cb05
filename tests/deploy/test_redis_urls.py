"""REDIS_URL forms: a database number is honoured by the broker, the results and the channel layer; a form we
cannot use stops the start with a message naming the variable; Celery leaves no bare result keys behind."""
from __future__ import annotations

import re
import secrets
import subprocess
import sys

import pytest

from pentagi_web.redis_urls import RedisUrlError, redis_targets
from tests.fakes import free_port
from tests.flows.pipeline_live import (
    REDIS_URL,
    ROOT,
    Stack,
    append_and_watch,
    assert_summarized_live,
    redis_up,
)

DB = 15


@pytest.mark.parametrize(("url", "broker", "channels"), [
    ("redis://h:6379", "redis://h:6379/0", "redis://h:6379/1"),
    ("redis://h:6379/", "redis://h:6379/0", "redis://h:6379/1"),
    ("redis://h:6379/15", "redis://h:6379/15", "redis://h:6379/15"),
    ("redis://h:6379?db=3", "redis://h:6379/3", "redis://h:6379/3"),
    ("rediss://u:p%40ss@h:6380/2?ssl_cert_reqs=required", "rediss://u:p%40ss@h:6380/2?ssl_cert_reqs=required",
     "rediss://u:p%40ss@h:6380/2?ssl_cert_reqs=required"),
])
def test_it_honours_the_database_in_the_url(url, broker, channels):
    assert redis_targets(url) == (type(redis_targets(url))(broker=broker, channels=channels))


def test_the_channel_layer_may_have_its_own_url():
    targets = redis_targets("redis://h:6379/4", "redis://other:6379/9")
    assert (targets.broker, targets.channels) == ("redis://h:6379/4", "redis://other:6379/9")
    assert redis_targets("redis://h/4", "redis://other").channels == "redis://other/1"


@pytest.mark.parametrize(("url", "reason"), [
    ("redis://h:6379/15/0", "must be a number"),
    ("redis://h:6379/x", "must be a number"),
    ("redis://h:6379/1?db=2", "given twice"),
    ("http://h:6379/1", "scheme"),
    ("h:6379", "scheme"),
    ("redis:///0", "no host"),
])
def test_an_unusable_form_is_refused_with_the_reason(url, reason):
    with pytest.raises(RedisUrlError, match=reason) as refused:
        redis_targets(url)
    assert "REDIS_URL" in str(refused.value)


def test_the_process_refuses_to_start_with_a_clear_message():
    env = {"DJANGO_SETTINGS_MODULE": "pentagi_web.settings", "REDIS_URL": "redis://h:6379/15/0",
           "PATH": "/usr/bin:/bin", "SECRET_KEY": "x" * 50}
    done = subprocess.run([sys.executable, "manage.py", "check"], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode != 0
    assert "ImproperlyConfigured: REDIS_URL='redis://h:6379/15/0': the database must be a number" in done.stderr


@pytest.fixture
def stack(tmp_path):
    prefix = f"pgw-test-{secrets.token_hex(6)}:"
    stack = Stack.create(tmp_path, REDIS_URL=f"{REDIS_URL}/{DB}", REDIS_KEY_PREFIX=prefix)
    yield stack
    stack.close()
    import redis

    client = redis.Redis.from_url(f"{REDIS_URL}/{DB}")
    keys = list(client.scan_iter(match=prefix + "*"))
    if keys:
        client.delete(*keys)


@pytest.mark.services
@pytest.mark.skipif(not redis_up(), reason=f"Redis is not answering at {REDIS_URL}")
def test_a_worker_and_the_channel_layer_run_on_the_database_of_the_url(stack):
    import redis

    creds = stack.provision()
    port = free_port()
    stack.start_worker()
    stack.start_daphne(port)
    frames, chain = append_and_watch(port, creds)
    worker_log = stack.log("worker")
    assert_summarized_live(frames, chain, worker_log + stack.log("daphne"))
    prefix = stack.env["REDIS_KEY_PREFIX"]
    used = {db: sorted(k.decode() for k in redis.Redis.from_url(f"{REDIS_URL}/{db}").scan_iter(match=prefix + "*"))
            for db in (0, 1, DB)}
    assert used[0] == [] and used[1] == [], used  # nothing strayed to the default databases
    assert any(key.startswith(prefix + "_kombu") for key in used[DB]), used[DB]  # the broker is on db 15
    task_ids = re.findall(r"flows\.summarize_chain\[([0-9a-f-]{36})\] received", worker_log)
    assert task_ids, worker_log[-2000:]
    for db in (0, 1, DB):  # results nobody reads are not stored: no bare (unprefixed) result keys
        client = redis.Redis.from_url(f"{REDIS_URL}/{db}")
        assert not [k for t in task_ids for k in client.scan_iter(match=f"*celery-task-meta-{t}")]
