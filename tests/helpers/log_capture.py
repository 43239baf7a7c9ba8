"""Log and audit lines as the app writes them (app.logs.JsonFormatter), caught from the loggers, and
the secrets the tests handled, so that a scan at the end of the run can prove none was ever written."""

import json
import logging

from app.logs import JsonFormatter

SECRET_MIN_LENGTH = 16  # every token, code, verifier and cookie is longer; shorter values would match by chance
# The app's own loggers: configure_logging replaces the root logger's handlers, never these.
APP_LOGGERS = ("app", "audit")

seen_secrets: set[str] = set()


def remember_secrets(*values) -> None:
    """Note tokens, codes, verifiers or cookie values a test used: no log line may ever contain one."""
    seen_secrets.update(value for value in values if isinstance(value, str) and len(value) >= SECRET_MIN_LENGTH)


class LineCapture(logging.Handler):
    """Every record of the loggers it is attached to, formatted as the app's stdout line when emitted
    (inside the request, so the request's id and address are in it)."""

    def __init__(self):
        super().__init__()
        self.setFormatter(JsonFormatter())
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record))

    def attach(self, *names: str) -> "LineCapture":
        for name in names:
            logging.getLogger(name).addHandler(self)
        return self

    def detach(self, *names: str) -> None:
        for name in names:
            logging.getLogger(name).removeHandler(self)

    def events(self, event: str | None = None) -> list[dict]:
        """The audit events caught so far (of name `event`, when given), parsed."""
        parsed = [json.loads(line) for line in self.lines]
        return [entry for entry in parsed if entry["logger"] == "audit" and event in (None, entry["event"])]


def audit_lines_of(log_text: str) -> list[dict]:
    """The audit events in the stdout of an app under gunicorn."""
    entries = [json.loads(line) for line in log_text.splitlines() if line.startswith('{"level"')]
    return [entry for entry in entries if entry["logger"] == "audit"]


def leaked(lines, secrets) -> list[tuple[str, str]]:
    """Every line holding one of `secrets`, with the secret masked, and the secret's first 4 characters."""
    text = "\n".join(lines)
    found = [secret for secret in secrets if secret in text]
    return [(secret[:4], line.replace(secret, "<secret>")) for secret in found for line in lines if secret in line]
