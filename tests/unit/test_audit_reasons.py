"""Audit reasons are a fixed set: every LoginFailed the code raises names one of app.metrics'
SIGNIN_FAILURES, so the counter's labels stay bounded and each starts at 0."""

import ast
from pathlib import Path

from app.metrics import SIGNIN_FAILURES

APP = Path(__file__).resolve().parent.parent.parent / "app"


def login_failures() -> list[tuple[str, object]]:
    """(file:line, the reason keyword's value) for every `LoginFailed(...)` call in app/."""
    found = []
    for path in sorted(APP.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "LoginFailed":
                reason = next((kw.value for kw in node.keywords if kw.arg == "reason"), None)
                found.append((f"{path.name}:{node.lineno}", getattr(reason, "value", reason)))
    return found


def test_every_sign_in_failure_names_a_known_reason():
    raised = login_failures()
    assert len(raised) >= 20
    assert [(where, reason) for where, reason in raised if reason not in SIGNIN_FAILURES] == []
    assert {reason for _, reason in raised} == set(SIGNIN_FAILURES)
