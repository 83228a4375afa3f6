"""The rooms of the package are layered: every import points down, so no two rooms import
each other, however indirectly. Checked twice: on the source (every import statement,
those inside functions and TYPE_CHECKING blocks included), and in fresh interpreters
(what importing a room actually loads)."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "semproxy"

# Lowest first. A room may import the rooms before it, never one after it: the order
# DESIGN.md's rooms and docs/en/architecture.md describe.
ROOMS = (
    "types", "errors", "observability", "transport", "balancer", "providers", "embeddings",
    "governance", "config", "health", "semantic", "protocols", "runtime", "cache", "quality",
    "server", "admin", "cli", "__main__",
)
RANK = {room: i for i, room in enumerate(ROOMS)}


def room_of(module: str) -> str | None:
    """`semproxy.x.y` -> "x"; the package's own `__init__` belongs to no room."""
    parts = module.split(".")
    return parts[1] if parts[0] == "semproxy" and len(parts) > 1 else None


def module_name(path: Path, package: Path = PACKAGE) -> str:
    rel = path.relative_to(package.parent).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return ".".join(parts)


def imported(path: Path, package: Path = PACKAGE) -> set[str]:
    """Every semproxy module `path` names in an import statement, wherever it stands."""
    name = module_name(path, package)
    parent = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = parent.split(".")[: len(parent.split(".")) - node.level + 1]
                base = ".".join(up + ([base] if base else []))
            found |= {base} | {f"{base}.{a.name}" for a in node.names}
    return {m for m in found if m.split(".")[0] == "semproxy"}


def arrows(package: Path = PACKAGE) -> set[tuple[str, str, str]]:
    """(importing module, its room, imported room) for every import across rooms."""
    out = set()
    for path in package.rglob("*.py"):
        source = room_of(module_name(path, package))
        for target in map(room_of, imported(path, package)):
            if source and target and target != source:
                out.add((module_name(path, package), source, target))
    return out


def test_every_room_is_in_the_layer_order() -> None:
    rooms = {room_of(module_name(p)) for p in PACKAGE.rglob("*.py")} - {None}
    assert rooms <= set(ROOMS), f"place these rooms in ROOMS: {rooms - set(ROOMS)}"


def test_every_import_points_down() -> None:
    upward = sorted(f"{module} ({source}) imports {target}"
                    for module, source, target in arrows() if RANK[target] > RANK[source])
    assert upward == []


def test_the_check_sees_an_upward_import(tmp_path: Path) -> None:
    # The walk above must catch imports hidden in functions and relative forms.
    probe = tmp_path / "semproxy" / "transport" / "probe.py"
    probe.parent.mkdir(parents=True)
    probe.write_text("def f():\n    from ..server import app\n    import semproxy.admin\n")
    assert arrows(tmp_path / "semproxy") == {("semproxy.transport.probe", "transport", "server"),
                                             ("semproxy.transport.probe", "transport", "admin")}


def loaded_rooms(room: str) -> list[str]:
    """The rooms a fresh interpreter has loaded after importing every module of `room`."""
    modules = sorted(module_name(p) for p in PACKAGE.rglob("*.py")
                     if room_of(module_name(p)) == room and p.name != "__main__.py")
    code = ("import importlib, json, sys\n"
            f"for m in {modules!r}: importlib.import_module(m)\n"
            "print(json.dumps(sorted({m.split('.')[1] for m in sys.modules "
            "if m.startswith('semproxy.')})))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=120)
    return list(json.loads(out.stdout))


def test_importing_a_room_loads_only_the_rooms_below_it() -> None:
    rooms = [r for r in ROOMS if r != "__main__" and any(
        room_of(module_name(p)) == r for p in PACKAGE.rglob("*.py"))]
    with ThreadPoolExecutor(4) as pool:
        loaded = dict(zip(rooms, pool.map(loaded_rooms, rooms), strict=True))
    above = {room: [r for r in found if RANK[r] > RANK[room]] for room, found in loaded.items()}
    assert {room: found for room, found in above.items() if found} == {}


def test_semantic_and_quality_import_nothing_of_the_server() -> None:
    # A fresh interpreter: the test session has imported server/ long ago.
    code = ("import sys, semproxy.semantic.router, semproxy.semantic.explain, "
            "semproxy.quality.commands, semproxy.quality.tuning; "
            "print(sorted(m for m in sys.modules if m.startswith('semproxy.server')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=120)
    assert out.stdout.strip() == "[]"


def test_importing_the_package_loads_no_model() -> None:
    code = ("import sys, semproxy.semantic; "
            "print([m for m in ('wordllama', 'semproxy.embeddings.local') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=120)
    assert out.stdout.strip() == "[]"
