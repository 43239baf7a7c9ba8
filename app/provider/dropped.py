"""A call to the provider over a kept-alive connection it has just closed (its idle timeout met our send)
fails before the provider saw it; such a call is sent once more, on a new connection. A timeout is not:
the provider may still be working on it, and a second wait would double the worst case."""

from collections.abc import Callable
from typing import TypeVar

import requests

T = TypeVar("T")


def sent_again_if_dropped(send: Callable[[], T]) -> T:
    """`send()`, and once more when its connection was refused or dropped (never after a timeout)."""
    try:
        return send()
    except requests.ConnectionError as error:
        if isinstance(error, requests.Timeout):
            raise
        return send()
