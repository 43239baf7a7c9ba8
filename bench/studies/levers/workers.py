"""Worker variants the levers study tries (`--worker-class bench.studies.levers.workers.<name>`)."""

import time

from server.gthread_worker import Worker

HOUSEKEEPING_S = 1.0


class QuietLoop(Worker):
    """The shipped worker, with the heartbeat (a utime of its temporary file) and the check that the
    master lives (getppid) done once a second instead of on every turn of the poller's loop."""

    _heartbeat_at = _parent_checked_at = 0.0
    _parent_alive = True

    def notify(self):
        now = time.monotonic()
        if now - self._heartbeat_at >= HOUSEKEEPING_S:
            self._heartbeat_at = now
            super().notify()

    def is_parent_alive(self):
        now = time.monotonic()
        if now - self._parent_checked_at >= HOUSEKEEPING_S:
            self._parent_checked_at = now
            self._parent_alive = super().is_parent_alive()
        return self._parent_alive
