"""gunicorn settings, Heroku style: PORT and WEB_CONCURRENCY from the environment, logs on stdout."""

import multiprocessing
import os

bind = f"0.0.0.0:{os.environ.get('PORT', '8000')}"
workers = int(os.environ.get("WEB_CONCURRENCY") or multiprocessing.cpu_count() + 1)
# Chosen by measurement (make bench, 2 cores; figures in README). Threads overlap the Redis and
# identity-provider waits; with keep-alive, gthread workers accept connections greedily (one worker
# took all 16 client connections in 30-60 % of runs), so keep-alive is off and every request is a
# new accept that the kernel spreads over the workers. Three workers of two threads kept the routes
# closest to the same-config ceiling; four sync workers gave more absolute req/s on this machine.
threads = int(os.environ.get("GUNICORN_THREADS", "2"))
worker_class = "gthread" if threads > 1 else "sync"
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
