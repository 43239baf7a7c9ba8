"""The ceiling of `make bench`: a bare Flask app whose one route returns a small JSON object."""

from flask import Flask

app = Flask(__name__)


@app.get("/")
def hello():
    """A small JSON object and nothing else."""
    return {"hello": "world"}
