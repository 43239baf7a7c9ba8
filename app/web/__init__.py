"""The demo page: static HTML and JavaScript at `/`, calling the API on the same origin."""

from flask import Blueprint, current_app

bp = Blueprint("web", __name__)


@bp.get("/")
def index():
    """The demo page."""
    return current_app.send_static_file("index.html")
