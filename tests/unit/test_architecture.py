"""The shape of app/: no import cycle, packages in their order, dependencies that point down, and modules
of a readable size with room to grow (the settings, config.py and config_values.py, and the HTTP server
around the app, server/, included).

Every import counts: at module level, inside functions and under TYPE_CHECKING, since moving an
import into a function hides a cycle without removing it.
"""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent
APP = ROOT / "app"
MAX_LINES = 250  # the hard stop: no module reaches it
# Room to grow: a module above this is split along a seam while it still has room, not at the hard stop.
ROOM_LINES = 200
# The modules allowed above ROOM_LINES for now, each with why and the seam it will be split along.
# Empty since issue 26 point 4: every module has room to grow.
LARGE_FOR_NOW: dict[str, str] = {}
SETTINGS = (ROOT / "config.py", ROOT / "config_values.py")
SERVER = ROOT / "server"
# Only the views (and the factory that builds what they use) reach the app's services.
MAY_IMPORT_EXTENSIONS = {
    "app",
    "app.wiring",
    "app.api.routes",
    "app.auth.routes",
    "app.health",
    "app.cli",
}
# The floors of app/, bottom up: a module imports from its own floor and the floors below, never above.
# The two front doors share a floor and never import each other; the views and the factory stand on top.
FLOORS = [
    (
        "the shared modules",
        (
            "app.errors",
            "app.challenges",
            "app.metrics",
            "app.metrics_endpoint",
            "app.prefixes",
            "app.logs",
            "app.audit",
            "app.tracing",
            "app.trace_privacy",
            "app.addresses",
            "app.security",
            "app.json_encoding",
            "app.routing",
            "app.error_responses",
            "app.redis_failures",
            "app.last_resort",
        ),
    ),
    ("store", ("app.store",)),
    ("provider", ("app.provider",)),
    ("tokens", ("app.tokens",)),
    ("sessions", ("app.sessions",)),
    ("the front doors", ("app.auth", "app.api")),
    (
        "the views and the factory",
        (
            "app",
            "app.wiring",
            "app.bearer_wiring",
            "app.extensions",
            "app.cli",
            "app.health",
            "app.web",
            "app.openapi",
            "app.api.routes",
            "app.auth.routes",
        ),
    ),
]
# The bottom of the stack: imported by everything, so they import nothing of the app's.
BOTTOM = {
    "app.metrics": set(),
    "app.errors": set(),
    "app.redis_failures": set(),
    "app.last_resort": set(),
    "app.challenges": {"app.errors"},
    "app.prefixes": set(),
    "app.logs": {"app.tracing"},
    "app.audit": {"app.metrics"},
    "app.tracing": {"app.trace_privacy"},
    "app.trace_privacy": set(),
}


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(path): path for path in sorted(APP.rglob("*.py"))}


def imports_of(name: str, source: str, known: set[str], *, is_package: bool = False) -> set[str]:
    """The app modules that module `name` imports anywhere in `source` (relative or absolute)."""
    package = name if is_package else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            # `from package import submodule` imports the submodule; `from module import name` the module.
            found.update(f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names)
    return {target for target in found if target in known and target != name}


def import_graph() -> dict[str, set[str]]:
    found = modules()
    return {
        name: imports_of(name, path.read_text(), set(found), is_package=path.name == "__init__.py")
        for name, path in found.items()
    }


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_the_finder_sees_every_kind_of_import():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]
    # A relative import under TYPE_CHECKING, an absolute one inside a function, a submodule by name.
    probe = (
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..extensions import Services\n"
        "def late():\n    from app.metrics import provider_call\n    from . import guard\n"
    )
    found = imports_of("app.api.probe", probe, set(modules()))
    assert found == {"app.extensions", "app.metrics", "app.api.guard"}


FRONT_DOORS = [name for name, _ in FLOORS].index("the front doors")


def floor_of(module: str) -> tuple[int, str]:
    """The floor of `module` and the package (or module) that placed it there: the longest match wins."""
    matches = [
        (len(prefix), index, prefix)
        for index, (_, prefixes) in enumerate(FLOORS)
        for prefix in prefixes
        if module == prefix or (module.startswith(prefix + ".") and prefix != "app")
    ]
    if not matches:
        raise AssertionError(f"{module} is on no floor: add it to FLOORS")
    _, index, prefix = max(matches)
    return index, prefix


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    """Each import against the floors: to a higher floor, or across from one front door to the other."""
    found = []
    for source, targets in sorted(graph.items()):
        source_floor, source_home = floor_of(source)
        for target in sorted(targets):
            target_floor, target_home = floor_of(target)
            across = source_floor == target_floor == FRONT_DOORS and source_home != target_home
            if target_floor > source_floor or across:
                found.append(f"{source} ({FLOORS[source_floor][0]}) imports {target} ({FLOORS[target_floor][0]})")
    return found


def test_the_floor_check_sees_an_import_from_a_lower_package_into_a_higher_one():
    graph = import_graph()
    probe = "from ..api.step_up import StepUpPolicy\n"
    graph["app.store.pokes"] = graph["app.store.pokes"] | imports_of("app.store.pokes", probe, set(modules()))
    graph["app.auth.flow"] = graph["app.auth.flow"] | {"app.api.guard"}
    assert upward_imports(graph) == [
        "app.auth.flow (the front doors) imports app.api.guard (the front doors)",
        "app.store.pokes (store) imports app.api.step_up (the front doors)",
    ]


def test_every_module_of_the_app_stands_on_a_floor_and_imports_only_from_its_floor_or_below():
    found = upward_imports(import_graph())
    assert found == [], "imports against the package order: " + "; ".join(found)


def test_no_module_of_the_app_is_part_of_an_import_cycle():
    found = cycles(import_graph())
    assert found == [], "import cycles: " + "; ".join(" -> ".join(cycle) for cycle in found)


def test_only_the_views_reach_the_services_in_extensions():
    importers = {name for name, targets in import_graph().items() if "app.extensions" in targets}
    assert importers <= MAY_IMPORT_EXTENSIONS, sorted(importers - MAY_IMPORT_EXTENSIONS)


@pytest.mark.parametrize("module", sorted(BOTTOM))
def test_the_bottom_modules_import_nothing_of_the_app_above_them(module):
    assert import_graph()[module] <= BOTTOM[module]


def sizes() -> dict[str, int]:
    """The lines of each module whose size is checked: app/'s, the settings beside it, and server/'s."""
    server = {f"server.{path.stem}": path for path in sorted(SERVER.glob("*.py"))}
    paths = {**modules(), **{path.name: path for path in SETTINGS}, **server}
    return {name: len(path.read_text().splitlines()) for name, path in paths.items()}


def without_room(found: dict[str, int], allowed: dict[str, str]) -> list[str]:
    """The modules of `found` above ROOM_LINES that `allowed` does not list, with their lines."""
    return [
        f"{name} ({lines} lines)" for name, lines in sorted(found.items()) if lines > ROOM_LINES and name not in allowed
    ]


def test_the_room_check_names_each_module_above_the_room_unless_it_is_allowed():
    found = {"app.small": 120, "app.full": ROOM_LINES, "app.over": ROOM_LINES + 1, "app.known": 230}
    assert without_room(found, {"app.known": "why, and its seam"}) == [f"app.over ({ROOM_LINES + 1} lines)"]


@pytest.mark.parametrize("module", sorted(sizes()))
def test_every_module_stays_readable_in_size(module):
    lines = sizes()[module]
    assert lines < MAX_LINES, f"{module} has {lines} lines; split it by concern"


def test_every_module_has_room_to_grow_unless_the_allow_list_says_why_not():
    found = without_room(sizes(), LARGE_FOR_NOW)
    assert found == [], (
        f"above {ROOM_LINES} lines: {'; '.join(found)}; split each along a seam (or list it in LARGE_FOR_NOW, "
        "saying why and along which seam it will be split)"
    )


def test_the_allow_list_names_only_modules_still_above_the_room():
    current = sizes()
    assert [name for name in LARGE_FOR_NOW if current.get(name, 0) <= ROOM_LINES] == []
