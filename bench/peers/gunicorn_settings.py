"""gunicorn settings of the plain Flask peer: every setting of the service's gunicorn.conf.py, read
from it (so whatever the service ships applies to the peer too), without its hooks, which serve the
service's own metrics, tracing and provider checks."""

import runpy
from pathlib import Path
from types import ModuleType

_shipped = runpy.run_path(str(Path(__file__).resolve().parents[2] / "server" / "gunicorn.conf.py"))
globals().update(
    {
        name: value
        for name, value in _shipped.items()
        if not name.startswith("_") and not callable(value) and not isinstance(value, ModuleType)
    }
)
