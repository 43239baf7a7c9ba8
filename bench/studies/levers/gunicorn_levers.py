"""gunicorn.conf.py as shipped, plus what the levers study tries that has no gunicorn option: the
interpreter's switch interval in each worker (LEVER_SWITCH_INTERVAL, seconds), set after the fork."""

import os
import sys
from pathlib import Path

_SHIPPED = Path(__file__).resolve().parents[3] / "server" / "gunicorn.conf.py"
exec(compile(_SHIPPED.read_text(), str(_SHIPPED), "exec"))  # the shipped settings and hooks, as they are
_shipped_post_worker_init = post_worker_init  # noqa: F821  (defined by the shipped file)


def post_fork(server, worker):
    """The switch interval the study asks for, in this worker."""
    interval = os.environ.get("LEVER_SWITCH_INTERVAL")
    if interval:
        sys.setswitchinterval(float(interval))


def post_worker_init(worker):
    """The shipped start-up check, on the Flask app inside when a2wsgi's adapter wraps it."""
    from flask import Flask

    from app.health import check_endpoints_in_background

    served = getattr(worker, "wsgi", None) or worker.asgi  # gunicorn's ASGI worker keeps its app as .asgi
    if isinstance(served, Flask):
        _shipped_post_worker_init(worker)
    else:
        check_endpoints_in_background(served.app)
