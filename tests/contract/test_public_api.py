"""The public API line: `bearagent` (users) and `bearagent.plugin` (plugin authors) are the only namespaces with a
promise; their names and signatures are pinned by a snapshot, and the example plugins and doc examples use nothing
else. When the snapshot test fails after a deliberate change, regenerate and review:

    uv run python scripts/update_public_api.py
"""

from __future__ import annotations

import ast
import copy
import importlib
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import cast

import pytest
from tests.support.public_api import NAMESPACES, REGENERATE, ROOT, SNAPSHOT, JsonDict, drift, public_api

import bearagent
import bearagent.plugin

PUBLIC_MODULES = frozenset(NAMESPACES)
DOCS_WITH_EXAMPLES = ("docs/plugins.md", "docs/python-api.md", "docs/tools.md", "docs/stream-protocol.md")
PYTHON_BLOCK = re.compile(r"```python\n(.*?)```", re.DOTALL)


def _snapshot() -> dict[str, JsonDict]:
    return cast(dict[str, JsonDict], json.loads(SNAPSHOT.read_text(encoding="utf-8")))


def test_the_public_api_matches_its_snapshot() -> None:
    problems = drift(public_api(), _snapshot())
    assert not problems, (
        "the public API (bearagent / bearagent.plugin) changed:\n  "
        + "\n  ".join(problems)
        + f"\nIf this is deliberate, run `{REGENERATE}`, review the diff and commit it (plugins and embedders see "
        "this change); otherwise restore the name or signature."
    )


def test_drift_names_the_name_and_what_changed() -> None:
    snapshot = _snapshot()
    changed = copy.deepcopy(snapshot)
    plugin = changed["bearagent.plugin"]
    del plugin["ToolSpec"]
    plugin["Brand"] = {"kind": "function", "signature": "() -> None"}
    kit = cast(JsonDict, plugin["StreamingProvider"])
    cast(JsonDict, kit["members"])["feed"] = "(event: object) -> None"
    problems = drift(changed, snapshot)
    assert "bearagent.plugin.ToolSpec: removed from the public API (still in the snapshot)" in problems
    assert "bearagent.plugin.Brand: new public name (not in the snapshot)" in problems
    assert any(p.startswith("bearagent.plugin.StreamingProvider: members.feed changed: ") for p in problems)
    assert len(problems) == 3


@pytest.mark.parametrize("namespace", NAMESPACES)
def test_every_exported_name_resolves_and_nothing_else_does(namespace: str) -> None:
    module = importlib.import_module(namespace)
    exported = cast(list[str], module.__all__)
    assert exported == sorted(exported) and len(set(exported)) == len(exported)
    lazy = cast(dict[str, str], vars(module)["_EXPORTS"])
    assert set(lazy) | {"__version__"} >= set(exported) and set(lazy) <= set(exported)
    for name in exported:
        assert getattr(module, name) is not None, name
    assert sorted(dir(module)) == sorted(exported)
    with pytest.raises(AttributeError, match=f"module '{namespace}' has no attribute 'NoSuchName'"):
        _ = module.NoSuchName


def test_the_namespaces_import_nothing_heavy() -> None:
    code = (
        "import sys\n"
        "import bearagent, bearagent.plugin\n"
        "from bearagent.plugin import hookimpl\n"
        "from bearagent import hookimpl as again, __version__\n"
        "print(sorted(m for m in ('pydantic', 'openai', 'anthropic', 'httpx', 'bearagent.api') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


def test_the_tool_and_provider_kits_are_the_implementations_the_runtime_uses() -> None:
    from bearagent.ports import ModelProvider, Tool
    from bearagent.providers.kit import StreamingProvider
    from bearagent.tools.base import NativeTool

    assert bearagent.plugin.Tool is Tool and bearagent.plugin.ModelProvider is ModelProvider
    assert issubclass(bearagent.plugin.BaseTool, NativeTool)
    assert bearagent.plugin.StreamingProvider is StreamingProvider
    assert bearagent.hookimpl is bearagent.plugin.hookimpl


# ----- only public names in the example plugins and the doc examples -----


def private_imports(source: str, where: str) -> list[str]:
    """Every use of a BearAgent name outside `bearagent` / `bearagent.plugin` and their `__all__`."""
    tree = ast.parse(source, filename=where)
    public = {name: set(cast(list[str], importlib.import_module(name).__all__)) for name in PUBLIC_MODULES}
    found: list[str] = []
    aliases: dict[str, str] = {}  # local name -> public module it is bound to
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "bearagent" or alias.name.startswith("bearagent."):
                    if alias.name not in PUBLIC_MODULES:
                        found.append(f"{where}:{node.lineno}: import {alias.name}")
                    elif alias.asname:
                        aliases[alias.asname] = alias.name
                    else:
                        aliases["bearagent"] = "bearagent"
        elif isinstance(node, ast.ImportFrom) and node.module is not None and node.level == 0:
            module = node.module
            if module != "bearagent" and not module.startswith("bearagent."):
                continue
            if module not in PUBLIC_MODULES:
                found.append(f"{where}:{node.lineno}: from {module} import ...")
                continue
            for alias in node.names:
                if module == "bearagent" and alias.name == "plugin":
                    aliases[alias.asname or "plugin"] = "bearagent.plugin"
                elif alias.name not in public[module]:
                    found.append(f"{where}:{node.lineno}: from {module} import {alias.name} (not exported)")
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases:
            module = aliases[node.value.id]
            if module == "bearagent" and node.attr == "plugin":
                continue
            if node.attr not in public[module]:
                found.append(f"{where}:{node.lineno}: {node.value.id}.{node.attr} (not exported by {module})")
    return found


def _plugin_modules() -> list[Path]:
    return sorted((ROOT / "plugins").rglob("*.py"))


def _doc_blocks() -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for doc in DOCS_WITH_EXAMPLES:
        text = (ROOT / doc).read_text(encoding="utf-8")
        for index, match in enumerate(PYTHON_BLOCK.finditer(text)):
            out.append((f"{doc} example #{index}", match.group(1)))
    return out


def test_what_a_workspace_returns_is_exported() -> None:
    """A public method returns only public names (issue 30: `Workspace.replay`'s report types were private)."""
    import typing

    import bearagent.api

    exported = {getattr(bearagent, name) for name in bearagent.__all__ if name != "__version__"}
    missing: list[str] = []
    for name, member in vars(bearagent.api.Workspace).items():
        if name.startswith("_") or not callable(member):
            continue
        hints = typing.get_type_hints(
            member, vars(bearagent.api) | {n: getattr(bearagent, n) for n in bearagent.__all__}
        )
        returned = hints.get("return")
        for arg in (*typing.get_args(returned), returned):
            if isinstance(arg, type) and arg.__module__.startswith("bearagent.") and arg not in exported:
                missing.append(f"Workspace.{name} -> {arg.__qualname__}")
    assert not missing, "returned but not exported by `bearagent`:\n" + "\n".join(missing)


def test_the_example_plugins_import_only_public_names() -> None:
    modules = _plugin_modules()
    assert len(modules) >= 2
    problems = [p for path in modules for p in private_imports(path.read_text(encoding="utf-8"), str(path))]
    assert not problems, "example plugins must use only `bearagent` / `bearagent.plugin`:\n" + "\n".join(problems)


def test_the_doc_examples_import_only_public_names() -> None:
    blocks = _doc_blocks()
    assert any("StreamingProvider" in code for _, code in blocks)
    problems = [p for where, code in blocks for p in private_imports(code, where)]
    assert not problems, "doc examples must use only `bearagent` / `bearagent.plugin`:\n" + "\n".join(problems)


def test_the_import_check_catches_private_names() -> None:
    source = (
        "import bearagent\n"
        "import bearagent.tools.base\n"
        "import bearagent.plugin as bp\n"
        "from bearagent.domain._base import JsonValue\n"
        "from bearagent.plugin import Tool, NotExported\n"
        "from bearagent import open_workspace\n"
        "x = bearagent.domain\n"
        "y = bp.ToolSpec, bp._EXPORTS\n"
    )
    assert private_imports(source, "m.py") == [
        "m.py:2: import bearagent.tools.base",
        "m.py:4: from bearagent.domain._base import ...",
        "m.py:5: from bearagent.plugin import NotExported (not exported)",
        "m.py:7: bearagent.domain (not exported by bearagent)",
        "m.py:8: bp._EXPORTS (not exported by bearagent.plugin)",
    ]
    assert bearagent.__version__ and SNAPSHOT.is_file() and Path(bearagent.plugin.__file__ or "").is_file()
