"""The framework is what plugins build on: no module under pyk8s/scheduler/framework imports a plugin (upstream:
pkg/scheduler/framework never imports framework/plugins)."""

from __future__ import annotations

import ast
from pathlib import Path

import pyk8s.scheduler.framework as framework

PLUGINS = "pyk8s.scheduler.plugins"


def imported_modules(path: Path, package: str) -> list[tuple[int, str]]:
    """(line, absolute module name) of every import in the file, those inside functions too."""
    out: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                name = ".".join([*base, *([node.module] if node.module else [])])
            else:
                name = node.module or ""
            out.append((node.lineno, name))
            out.extend((node.lineno, f"{name}.{alias.name}") for alias in node.names)
    return out


def test_imported_modules_resolves_relative_imports(tmp_path: Path) -> None:
    f = tmp_path / "m.py"
    f.write_text(
        "from ..plugins import helper\nfrom .types import NodeInfo\ndef f():\n    import pyk8s.scheduler.plugins\n"
    )
    got = imported_modules(f, "pyk8s.scheduler.framework")
    assert (1, "pyk8s.scheduler.plugins.helper") in got
    assert (2, "pyk8s.scheduler.framework.types") in got
    assert (4, "pyk8s.scheduler.plugins") in got


def test_the_framework_imports_no_plugin() -> None:
    root = Path(framework.__file__).parent
    offending = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).with_suffix("")
        package = ".".join(["pyk8s.scheduler.framework", *rel.parts[:-1]])
        for line, name in imported_modules(path, package):
            if name == PLUGINS or name.startswith(PLUGINS + "."):
                offending.append(f"{path.relative_to(root.parent)}:{line} imports {name}")
    assert offending == []
