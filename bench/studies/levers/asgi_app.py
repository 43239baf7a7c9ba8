"""The service's Flask app as an ASGI app through a2wsgi (each request on its thread pool of
LEVER_ASGI_THREADS threads), for uvicorn and gunicorn's ASGI worker in the levers study."""

import os

from a2wsgi import WSGIMiddleware

from wsgi import app as flask_app

app = WSGIMiddleware(flask_app, workers=int(os.environ.get("LEVER_ASGI_THREADS", "8")))
