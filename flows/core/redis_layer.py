"""The Redis channel layer with a group send in two round trips (one when nobody watches) instead of four.

Every append broadcasts to its chain's group (`flows.core.events.broadcast`). channels_redis sends to a group in
four commands, each its own round trip and, in redis-py's asyncio client, about 85 microseconds of the server's
event loop: drop the group's expired members, list the members, drop each member channel's expired messages, and
the script that queues the message where there is room. Here the first two are one script (`_MEMBERS_LUA`), and the
third runs inside the queueing script (`_SEND_LUA`), before its capacity check as before: an append nobody watches
costs one round trip, a watched one two. Which channel keys get which serialized message, capacities, expiry and
the "over capacity" log are channels_redis's own (`_map_channel_keys_to_connection`, the same arguments), so what a
consumer receives is what it received from the stock layer (tests/flows/test_redis_layer.py compares both).
"""
from __future__ import annotations

import logging
import time
from typing import Any

from channels_redis.core import RedisChannelLayer

__all__ = ["RedisLayer"]

log = logging.getLogger(__name__)

# KEYS[1]: the group's sorted set (member -> when it joined); ARGV[1]: members that joined before it are gone.
_MEMBERS_LUA = """
redis.call('ZREMRANGEBYSCORE', KEYS[1], 0, ARGV[1])
return redis.call('ZRANGE', KEYS[1], 0, -1)
"""

# KEYS: channel keys; ARGV: one message per key, one capacity per key, then now, the keys' expiry in seconds and
# the time before which a queued message has expired. Returns how many keys were full.
_SEND_LUA = """
local n = #KEYS
local now, expiry, stale_before = ARGV[2 * n + 1], ARGV[2 * n + 2], ARGV[2 * n + 3]
local over_capacity = 0
for i = 1, n do
    redis.call('ZREMRANGEBYSCORE', KEYS[i], 0, stale_before)
    if redis.call('ZCOUNT', KEYS[i], '-inf', '+inf') < tonumber(ARGV[i + n]) then
        redis.call('ZADD', KEYS[i], now, ARGV[i])
        redis.call('EXPIRE', KEYS[i], expiry)
    else
        over_capacity = over_capacity + 1
    end
end
return over_capacity
"""


class RedisLayer(RedisChannelLayer):
    """channels_redis's layer; only `group_send` is changed (see the module docstring)."""

    async def group_send(self, group: str, message: dict[str, Any]) -> None:
        assert self.require_valid_group_name(group), "Group name not valid"
        connection = self.connection(self.consistent_hash(group))
        joined_before = int(time.time()) - self.group_expiry
        members = await connection.eval(_MEMBERS_LUA, 1, self._group_key(group), joined_before)
        channel_names = [member.decode("utf8") for member in members]
        if not channel_names:
            return
        by_connection, messages, capacities = self._map_channel_keys_to_connection(channel_names, message)
        for index, keys in by_connection.items():
            now = time.time()
            args = [*(messages[key] for key in keys), *(capacities[key] for key in keys),
                    now, self.expiry, int(now) - int(self.expiry)]
            over_capacity = await self.connection(index).eval(_SEND_LUA, len(keys), *keys, *args)
            if over_capacity > 0:
                log.info("%s of %s channels over capacity in group %s", over_capacity, len(channel_names), group)
