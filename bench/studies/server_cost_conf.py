"""gunicorn.conf.py as shipped, plus bench/studies/server_cost.py's wrapping: each function its ZONES
name runs inside a C function of its own, once the worker has started (ZONES_DIR holds the extension)."""

import functools
import importlib
import os
import sys
from pathlib import Path

_SHIPPED = Path(__file__).resolve().parents[2] / "server" / "gunicorn.conf.py"
exec(compile(_SHIPPED.read_text(), str(_SHIPPED), "exec"))  # the shipped settings and hooks, as they are
_shipped_post_worker_init = post_worker_init  # noqa: F821  (defined by the shipped file)


def _zoned(zone, function):
    @functools.wraps(function)
    def wrapped(*args, **kwargs):
        return zone(function, *args, **kwargs)

    return wrapped


def post_worker_init(worker):
    """The shipped check, then every ZONES function wrapped (the app through worker.wsgi)."""
    _shipped_post_worker_init(worker)
    sys.path.insert(0, os.environ["ZONES_DIR"])
    import zones

    from bench.studies.server_cost import ZONES

    for number, (label, where) in enumerate(ZONES):
        zone = getattr(zones, f"zone_{number}")
        module_name, path = where.split(":")
        try:
            owner = importlib.import_module(module_name)
        except ImportError:
            continue
        *owners, attribute = path.split(".")
        for name in owners:
            owner = getattr(owner, name, None)
        if owner is None or attribute not in vars(owner):
            continue
        if label.startswith("app"):
            worker.wsgi = _zoned(zone, worker.wsgi)
            continue
        setattr(owner, attribute, _zoned(zone, vars(owner)[attribute]))
