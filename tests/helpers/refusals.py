"""The reasons introspection mode logs for refused tokens, which clients never see: collected from
its logger directly, since the app's logging setup replaces the root logger's handlers (caplog's)."""

import logging
from contextlib import contextmanager

from app.tokens import introspection

PREFIX = "access token refused: "


class RefusalReasons(logging.Handler):
    """Every reason logged for a refused token while attached, in order."""

    def __init__(self):
        super().__init__(logging.INFO)
        self.reasons: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if message.startswith(PREFIX):
            self.reasons.append(message.removeprefix(PREFIX))


@contextmanager
def refusal_reasons():
    """A live list of the reasons logged inside the block."""
    logger = logging.getLogger(introspection.__name__)
    handler, level = RefusalReasons(), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        yield handler.reasons
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
