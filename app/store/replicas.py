"""Writes whose loss in a failover would hurt a user (a rotated refresh token, a new session, a poke's
cooldown), confirmed on a replica before the service answers: `WAIT 1 <REDIS_WAIT_TIMEOUT_MS>` on the
write's own connection, skipped where the key's master has no replica connected.

Redis replicates asynchronously, so a master that dies takes with it what it acknowledged and had not
yet sent on. WAIT blocks the connection that wrote until a replica holds everything up to that write;
it must follow the write on the same connection (on Redis Cluster, one to the key's master), so a
batch goes as one pipeline on that connection.

A master with no replica connected is not one without a replica: a replica that was cut off, or lags behind
a broken link, is still the one Sentinel or the cluster promotes when that master dies, and what the master
acknowledged meanwhile dies with it. So once a replica has been seen (behind Sentinel, from the start), a
write to a master without one is answered at once (waiting would only add the timeout) but counted as
unconfirmed, like one WAIT timed out on.
"""

import logging
import math
import time
from collections.abc import Callable
from contextlib import contextmanager

import redis
from redis.cluster import RedisCluster
from redis.exceptions import AskError, ClusterError, NoScriptError
from redis.sentinel import SentinelConnectionPool

REPLICAS_TRUSTED_FOR = 5.0  # seconds a master's answer to ROLE is reused
MISSING_REPLICA_TRUSTED_FOR = 1.0  # ...when it had no replica where one was seen: each such write is counted
SINGLE = "single"  # the one master behind a non-cluster client (Sentinel's follows the current master)

log = logging.getLogger(__name__)


class ConfirmedWrites:
    """Runs batches of commands on one key's master and confirms them on a replica (`timeout_ms` 0: never)."""

    def __init__(self, client, *, timeout_ms: int, on_unconfirmed: Callable[[str], None] = lambda write: None):
        self._redis = client
        self._timeout_ms = timeout_ms
        self._on_unconfirmed = on_unconfirmed
        self._cluster = isinstance(client, RedisCluster)
        self._replicas: dict[str, tuple[bool, float]] = {}  # master -> (has a replica, when ROLE said so)
        # Some master had a replica (Sentinel's always: it has one to promote), so one without any is missing it.
        self._replicated = isinstance(getattr(client, "connection_pool", None), SentinelConnectionPool)
        self._scripts: dict[str, str] = {}
        self._warned = {True: 0.0, False: 0.0}  # waited (timed out) or not (no replica) -> when last warned

    def register_script(self, source: str):
        """A redis-py Script for `source`, which execute() loads again on a master lacking it (a promoted replica)."""
        script = self._redis.register_script(source)
        self._scripts[script.sha] = source
        return script

    def execute(self, write: str, key: str, commands: list[tuple], also: list[tuple] = ()) -> tuple[list, list]:
        """The results of `commands` (raw commands on `key`'s slot) and of `also` (any keys, not confirmed), in
        one round trip where the deployment allows; `commands` are on a replica of `key`'s master when this
        returns, else counted as an unconfirmed `write`. A batch is sent again after the master named another
        (a failover) and after it lacked one of its scripts (then loaded), so it must be safe to send again."""
        retried = set()
        while True:
            try:
                return self._execute(write, key, commands, also)
            except (AskError, NoScriptError) as error:
                cause = AskError if isinstance(error, AskError) else NoScriptError
                if cause in retried:
                    raise ClusterError(f"a write met {type(error).__name__} twice: {error}") from None
                retried.add(cause)

    def _execute(self, write: str, key: str, commands: list[tuple], also) -> tuple[list, list]:
        master, client = self._master_of(key)
        with self._following(master):
            confirming = self._timeout_ms and self._has_replica(master, client)
        if not confirming:
            results = self._run(self._redis, [*also, *commands])
            if self._timeout_ms and self._replicated:
                self._unconfirmed(write, master, waited=False)
            return results[len(also) :], results[: len(also)]
        # On a cluster the other keys live elsewhere: they go first, through the cluster client.
        also_results = self._run(self._redis, list(also)) if self._cluster and also else []
        batch = [*commands] if self._cluster else [*also, *commands]
        with self._following(master):
            *results, confirmed = self._run(client, [*batch, ("WAIT", 1, self._timeout_ms)])
        if confirmed < 1:
            self._unconfirmed(write, master, waited=True)
        if self._cluster:
            return results, also_results
        return results[len(also) :], results[: len(also)]

    @contextmanager
    def _following(self, master: str):
        """On a failed connection or a MOVED from `master`: ask ROLE again next time and, on a cluster,
        read the slot map again, so the next write finds the slot's new master (the cluster client does
        so itself for its own commands only)."""
        try:
            yield
        except (redis.ConnectionError, redis.TimeoutError, AskError):
            self._replicas.pop(master, None)
            if self._cluster:
                self._redis.nodes_manager.initialize()
            raise

    def _master_of(self, key: str):
        """The name of `key`'s master and a client whose pipelines reach that master on one connection."""
        if not self._cluster:
            return SINGLE, self._redis
        node = self._redis.get_node_from_key(key)
        return node.name, self._redis.get_redis_connection(node)

    def _has_replica(self, master: str, client) -> bool:
        has, asked = self._replicas.get(master, (False, -math.inf))
        now = time.monotonic()
        if now - asked < (MISSING_REPLICA_TRUSTED_FOR if self._replicated and not has else REPLICAS_TRUSTED_FOR):
            return has
        try:
            role = client.execute_command("ROLE")
        except redis.ResponseError as refused:
            log.warning("writes are not confirmed on a replica: Redis refuses ROLE (%s)", refused)
            role = [b"master", 0, []]
        if role[0] not in (b"master", "master"):
            return True  # a master being demoted: the write fails, or WAIT says so
        self._replicated = self._replicated or bool(role[2])
        self._replicas[master] = (bool(role[2]), now)
        return bool(role[2])

    def _unconfirmed(self, write: str, master: str, *, waited: bool) -> None:
        # Answered all the same: the master holds the write, and refusing would not undo it (the provider
        # has rotated the refresh token, the cooldown runs); the metric tells the operator replicas lag.
        if waited:
            self._replicas.pop(master, None)  # ask ROLE again: the replica may be gone
        self._on_unconfirmed(write)
        if time.monotonic() - self._warned[waited] > REPLICAS_TRUSTED_FOR:
            self._warned[waited] = time.monotonic()
            if waited:
                log.warning("no replica confirmed a %s write within %d ms", write, self._timeout_ms)
            else:
                log.warning("a %s write was not confirmed: its master has no replica connected", write)

    def _run(self, client, batch: list[tuple]) -> list:
        """`batch` in one pipeline on `client`; raises its first error, after loading any script a server lacked."""
        pipe = client.pipeline(transaction=False)
        for command in batch:
            pipe.execute_command(*command)
        results = pipe.execute(raise_on_error=False)
        for command, result in zip(batch, results, strict=True):
            if isinstance(result, NoScriptError) and command[1] in self._scripts:
                client.script_load(self._scripts[command[1]])
        for command, result in zip(batch, results, strict=True):
            if isinstance(result, Exception):
                if command[0] == "WAIT":
                    # UNBLOCKED, or "cannot be used with replica instances": demoted before a replica confirmed.
                    raise redis.exceptions.ReadOnlyError(f"the master was demoted during WAIT: {result}")
                raise result
        return results
