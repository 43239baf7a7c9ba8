"""Measurements of the service, run on demand and never by `make test`: `make bench` (bench/run.py)."""
