"""Rotated session tokens that could not be stored because the session's Redis master failed mid-refresh:
kept in this process and stored as soon as Redis answers again, until the session's refresh lock would
expire. The lock stays held meanwhile, so no other request spends the old refresh token, which the provider
has already replaced (reusing it signs the user out, or revokes the whole grant)."""

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from ..redis_failures import REDIS_DOWN, is_failover_refusal

RETRY_EVERY = 0.2  # seconds between tries while Redis fails over

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Rotation:
    ref: str
    version: int  # the version the refresh read: stored only if the record still has it
    record: dict
    owner: str  # the refresh lock's owner, released once stored
    until: float  # time.monotonic() when the lock expires


def unavailable(error: BaseException) -> bool:
    """Whether `error` is Redis unreachable or mid-failover (worth trying again), not a refusal."""
    return isinstance(error, REDIS_DOWN) or is_failover_refusal(error)


class PendingRotations:
    """Stores kept rotations from a thread of their own, by `store(ref, version, record) -> bool` (False: the
    record moved on, so there is nothing to store) then `release(ref, owner)`."""

    def __init__(self, store: Callable[[str, int, dict], bool], release: Callable[[str, str], None]):
        self._store = store
        self._release = release
        self._pending: dict[tuple[str, str], Rotation] = {}
        self._lock = threading.Lock()
        self._worker: threading.Thread | None = None

    def keep(self, rotation: Rotation) -> None:
        """Store `rotation` as soon as Redis lets us; its refresh lock is released then, not before."""
        with self._lock:
            self._pending[rotation.ref, rotation.owner] = rotation
            if self._worker is None or not self._worker.is_alive():
                self._worker = threading.Thread(target=self._run, name="pending-rotations", daemon=True)
                self._worker.start()

    def holds(self, ref: str, owner: str) -> bool:
        """Whether the lock `owner` took on session `ref` now belongs to a kept rotation."""
        return (ref, owner) in self._pending

    def _run(self) -> None:
        while True:
            time.sleep(RETRY_EVERY)  # Redis has just failed: no use asking again at once
            with self._lock:
                pending = list(self._pending.values())
                if not pending:
                    self._worker = None
                    return
            for rotation in pending:
                if self._settled(rotation):
                    with self._lock:
                        del self._pending[rotation.ref, rotation.owner]

    def _settled(self, rotation: Rotation) -> bool:
        """Whether `rotation` is done with: stored, moved on, failed for good, or out of time."""
        try:
            if time.monotonic() >= rotation.until:
                log.warning("rotated session tokens could not be stored before their refresh lock expired")
            else:
                self._store(rotation.ref, rotation.version, rotation.record)
            self._release(rotation.ref, rotation.owner)
        except Exception as error:
            if unavailable(error) and time.monotonic() < rotation.until:
                return False
            if not unavailable(error):
                log.exception("rotated session tokens could not be stored")
        return True
