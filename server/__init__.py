"""The HTTP server around the app: gunicorn's settings and hooks (gunicorn.conf.py, the Procfile's
--config), its worker (gthread_worker.py, with request_buffer.py and request_threads.py) and its
logger. Not in app/: gunicorn's master reads these before any app exists, the worker overrides
internals of the pinned gunicorn 27.0.1, and the app itself runs under any WSGI server (the tests and
bench/studies call it directly)."""
