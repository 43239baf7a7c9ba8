"""gunicorn settings, Heroku style: PORT and WEB_CONCURRENCY from the environment, logs on stdout."""

import multiprocessing
import os

bind = f"0.0.0.0:{os.environ.get('PORT', '8000')}"
workers = int(os.environ.get("WEB_CONCURRENCY") or multiprocessing.cpu_count())
# Chosen by measurement (make bench, 2 cores; figures in README): threads overlap the Redis and
# identity-provider waits (sync workers: public profile 0.39 of the ceiling, gthread: 0.52), but
# gthread workers with keep-alive accept connections greedily, and in 30-60 % of runs one worker
# took all 16 client connections while the other idled. Without keep-alive every request is a new
# accept, which the kernel spreads over the workers.
worker_class = "gthread"
threads = int(os.environ.get("GUNICORN_THREADS", "4"))
timeout = 30
graceful_timeout = 20
keepalive = 0
# The app writes one JSON line per request itself (app/logs.py); gunicorn adds only its own events.
accesslog = None
errorlog = "-"
loglevel = os.environ.get("GUNICORN_LOG_LEVEL", "info")
# Forwarded headers are trusted only from the configured proxies (Heroku's router: FORWARDED_ALLOW_IPS=*).
forwarded_allow_ips = os.environ.get("FORWARDED_ALLOW_IPS", "127.0.0.1")
# Several instances may share a host (tests, benchmarks); none needs gunicorn's runtime control socket.
control_socket_disable = True
