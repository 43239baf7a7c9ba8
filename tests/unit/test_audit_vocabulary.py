"""The audit vocabulary has one home, app.audit.EVENTS, and this ties it to the code both ways: every
event and reason code that app/ writes is listed, and every listed one is written somewhere. A reason
that is not a literal at its audit() call is followed to where its values are written (SOURCES): a new
kind of call site fails here until it is added, so the counter's labels stay bounded and each starts at 0."""

import ast
import json
import re
from functools import cache
from pathlib import Path

import pytest

from app import audit as vocabulary
from app.audit import EVENTS, NO_REASON, PROVIDER_ERRORS, provider_error
from app.provider.token_answers import RefreshRejected

APP = Path(__file__).resolve().parent.parent.parent / "app"


@cache
def modules() -> dict[str, ast.Module]:
    return {path.relative_to(APP).as_posix(): ast.parse(path.read_text()) for path in sorted(APP.rglob("*.py"))}


@cache
def all_calls() -> dict[str, list[tuple[str, ast.FunctionDef | None, ast.Call]]]:
    """Every call in app/ by the name it calls (a function or a method), with its module and innermost function."""
    found: dict[str, list] = {}

    def visit(module: str, node, function) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Call):
                called = child.func.id if isinstance(child.func, ast.Name) else getattr(child.func, "attr", None)
                found.setdefault(called, []).append((module, function, child))
            visit(module, child, child if isinstance(child, ast.FunctionDef) else function)

    for module, tree in modules().items():
        visit(module, tree, None)
    return found


def calls_to(name: str, module: str | None = None) -> list[tuple[str, ast.FunctionDef | None, ast.Call]]:
    """(module, enclosing function, call) for every call of `name` in app/ (in `module`, when named)."""
    return [entry for entry in all_calls().get(name, []) if module in (None, entry[0])]


def literal(node) -> set[str] | None:
    """The strings `node` can be when that is fixed where it is written: a string, an app.audit
    constant, or a choice between such; None for anything else."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return {node.value}
    if isinstance(node, ast.Name) and node.id.isupper() and isinstance(getattr(vocabulary, node.id, None), str):
        return {getattr(vocabulary, node.id)}
    if isinstance(node, ast.IfExp):
        body, orelse = literal(node.body), literal(node.orelse)
        return body | orelse if body is not None and orelse is not None else None
    return None


def argument(call: ast.Call, position: int | None, keyword: str):
    if position is not None and len(call.args) > position:
        return call.args[position]
    return next((kw.value for kw in call.keywords if kw.arg == keyword), None)


def passed(callee: str, position: int | None, keyword: str, module: str | None = None) -> set[str]:
    """Every value given to that parameter of `callee` (in `module`, when named): each must be traceable."""
    values = set()
    for path, function, call in calls_to(callee, module):
        node = argument(call, position, keyword)
        assert node is not None, f"{path}:{call.lineno}: {callee}() without its {keyword}"
        values |= traced(path, function, node)
    return values


def rate_limit_reasons() -> set[str]:
    """The reasons of the views marked rate_limited: a client limit's is its view's name (the endpoint's
    last part); a network limit's (a view marked with `network=`) that name and `_network`."""
    reasons = set()
    for tree in modules().values():
        for function in ast.walk(tree):
            for decorator in function.decorator_list if isinstance(function, ast.FunctionDef) else ():
                if isinstance(decorator, ast.Call) and getattr(decorator.func, "id", None) == "rate_limited":
                    reasons.add(function.name)
                    if any(keyword.arg == "network" for keyword in decorator.keywords):
                        reasons.add(f"{function.name}_network")
    return reasons


def dict_values(module: str, name: str) -> set[str]:
    (assigned,) = [
        node.value
        for node in modules()[module].body
        if isinstance(node, ast.Assign) and any(getattr(target, "id", None) == name for target in node.targets)
    ]
    return {value for node in assigned.values for value in literal(node)}


def refresh_refusals() -> set[str]:
    """What RefreshRejected.reason can be: provider_error's answers, and nothing else is ever built."""
    for _, _, call in calls_to("RefreshRejected"):
        assert len(call.args) == 1 and not call.keywords  # the provider's code, read through provider_error
    return {*PROVIDER_ERRORS, provider_error("an-unlisted-code"), provider_error(None)}


# (module, enclosing function, expression) -> the values it can take, for reasons not literal at the call.
SOURCES = {
    ("error_responses.py", "handle_login_failed", "error.reason"): lambda: passed("LoginFailed", None, "reason"),
    ("error_responses.py", "handle_bad_logout_token", "error.reason"): lambda: passed("BadLogoutToken", 1, "reason"),
    ("error_responses.py", "handle_rate_limited", "f'{view}_network' if by_network else view"): rate_limit_reasons,
    ("error_responses.py", "handle_bound_reached", "BOUNDS[type(error)]"): (
        lambda: dict_values("error_responses.py", "BOUNDS")
    ),
    ("api/guard.py", "stepped_up", "refused.reason"): lambda: passed("_refuse", 0, "reason", "api/step_up.py"),
    ("sessions/per_user.py", "_ended", "by"): lambda: passed("_ended", 0, "by", "sessions/per_user.py"),
    ("sessions/records.py", "_ended", "reason"): lambda: passed("_ended", 0, "reason", "sessions/records.py"),
    ("sessions/refresh.py", "_refused", "reason"): lambda: passed("_refused", 1, "reason", "sessions/refresh.py"),
    ("sessions/refresh.py", "_refresh_locked", "rejected.reason"): refresh_refusals,
}


def traced(module: str, function: ast.FunctionDef | None, node) -> set[str]:
    fixed = literal(node)
    if fixed is not None:
        return fixed
    where = (module, function.name if function else None, ast.unparse(node))
    assert where in SOURCES, f"{where}: say in SOURCES where this reason's values are written"
    return SOURCES[where]()


@cache
def written() -> dict[str, set[str]]:
    """Every event app/ writes, with every reason code it writes it with (NO_REASON for none)."""
    events: dict[str, set[str]] = {}
    for path, function, call in calls_to("audit"):
        names = literal(call.args[0])
        assert names is not None, f"{path}:{call.lineno}: an event name must be written out"
        reason = argument(call, None, "reason")
        reasons = {NO_REASON} if reason is None else traced(path, function, reason)
        for name in names:
            events.setdefault(name, set()).update(reasons)
    return events


def test_every_event_app_writes_is_listed_and_every_listed_event_is_written():
    assert set(written()) == set(EVENTS)


@pytest.mark.parametrize("event", sorted(EVENTS))
def test_every_reason_an_event_is_written_with_is_listed_and_every_listed_one_is_written(event):
    assert written()[event] == set(EVENTS[event] or (NO_REASON,))


def test_the_vocabulary_lists_each_event_and_reason_once_in_the_counters_words():
    series = vocabulary.known_series()
    assert len(series) == len(set(series)) >= 60
    assert all(reason.isascii() and reason.replace("_", "").isalnum() for _, reason in series)


@pytest.mark.parametrize(
    ("code", "reason", "error"),
    [
        ("invalid_grant", "invalid_grant", None),
        ("invalid_client", "invalid_client", None),
        ("weird <b>code</b>", "unlisted_error", "weirdbcodeb"),
        ("x" * 100, "unlisted_error", "x" * 64),
        (None, "no_error_code", None),
        ("", "no_error_code", None),
    ],
)
def test_a_refused_refresh_names_the_providers_code_in_the_vocabulary_and_keeps_an_unlisted_one_printable(
    code, reason, error
):
    rejected = RefreshRejected(code)
    assert (rejected.reason, rejected.error) == (reason, error)
    assert rejected.reason in EVENTS["refresh.refused"]


def audit_section() -> str:
    text = (APP.parent / "docs" / "operations.md").read_text()
    return text.split("## Audit events", 1)[1].split("\n## ", 1)[0]


@pytest.mark.parametrize("event", sorted(EVENTS))
def test_the_operations_guide_has_a_row_for_every_event_naming_each_of_its_reasons(event):
    rows = [line.split(" | ") for line in audit_section().splitlines() if line.startswith("| `")]
    (row,) = [cells for cells in rows if f"`{event}`" in cells[0]]
    named = set(re.findall(r"`([a-z0-9_]+)`", row[2]))
    assert named >= set(EVENTS[event]) if EVENTS[event] else row[2] == "none"


def test_the_operations_guide_has_one_example_line_per_event_in_the_vocabulary():
    block = audit_section().split("```\n", 2)[1]
    examples = [json.loads(line) for line in block.splitlines()]
    assert sorted(example["event"] for example in examples) == sorted(EVENTS)
    for example in examples:
        assert example["logger"] == "audit" and example["message"] == example["event"]
        assert example.get("reason", NO_REASON) in (EVENTS[example["event"]] or (NO_REASON,))
