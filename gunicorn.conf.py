"""gunicorn settings, Heroku style: PORT and WEB_CONCURRENCY from the environment, logs on stdout."""

import multiprocessing
import os

bind = f"0.0.0.0:{os.environ.get('PORT', '8000')}"
workers = int(os.environ.get("WEB_CONCURRENCY") or multiprocessing.cpu_count())
# Threads let a request that waits on the identity provider (a token refresh) not block its worker.
worker_class = "gthread"
threads = int(os.environ.get("GUNICORN_THREADS", "4"))
timeout = 30
graceful_timeout = 20
keepalive = 5
# The app writes one JSON line per request itself (app/logs.py); gunicorn adds only its own events.
accesslog = None
errorlog = "-"
loglevel = os.environ.get("GUNICORN_LOG_LEVEL", "info")
# Forwarded headers are trusted only from the configured proxies (Heroku's router: FORWARDED_ALLOW_IPS=*).
forwarded_allow_ips = os.environ.get("FORWARDED_ALLOW_IPS", "127.0.0.1")
# Several instances may share a host (tests, benchmarks); none needs gunicorn's runtime control socket.
control_socket_disable = True
