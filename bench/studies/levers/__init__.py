"""What the server levers study (`python -m bench.studies.levers`) serves the app through, beside gunicorn.conf.py."""
