"""`link_compiled` (tests/support/bytecode_prefix.py) makes bytecode compiled beside the sources usable under a prefix:
Python, run with that prefix, imports the module from the linked file without compiling it again, and a module whose
source changed afterwards is compiled again into a new file, never written through the link."""

from __future__ import annotations

import os
import py_compile
import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def _python(prefix: Path, code: str, *, cwd: Path) -> str:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env |= {"PYTHONPYCACHEPREFIX": str(prefix), "PYTHONPATH": os.pathsep.join([str(TESTS.parent), str(cwd)])}
    return subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=cwd, check=True, capture_output=True, text=True, timeout=60
    ).stdout


def test_linked_bytecode_is_imported_as_is_and_a_stale_one_is_replaced(tmp_path: Path) -> None:
    lib = tmp_path / "lib"
    (lib / "pkg").mkdir(parents=True)
    for name, text in (("__init__.py", ""), ("fresh.py", "VALUE = 1\n"), ("edited.py", "VALUE = 2\n")):
        (lib / "pkg" / name).write_text(text)
        cache = lib / "pkg" / "__pycache__" / f"{name[:-3]}.{sys.implementation.cache_tag}.pyc"
        py_compile.compile(str(lib / "pkg" / name), cfile=str(cache), doraise=True)  # beside it, whatever the prefix
    prefix, marker = tmp_path / "prefix", tmp_path / "prefix" / ".linked"
    originals = {p.name: p.stat().st_ino for p in (lib / "pkg" / "__pycache__").iterdir()}
    assert len(originals) == 3

    link = "from pathlib import Path; from tests.support.bytecode_prefix import link_compiled; link_compiled([{}], Path({}))"
    _python(prefix, link.format(repr(str(lib)), repr(str(marker))), cwd=tmp_path)
    mirror = prefix / (lib / "pkg").relative_to(lib.anchor)  # where the prefix keeps the package's bytecode
    linked = {p.name: p for p in mirror.glob("*.pyc")}
    assert {name: p.stat().st_ino for name, p in linked.items()} == originals
    assert marker.exists()

    (lib / "pkg" / "edited.py").write_text("VALUE = 22  # edited after compiling\n")
    out = _python(prefix, "import pkg.fresh, pkg.edited; print(pkg.fresh.VALUE, pkg.edited.VALUE)", cwd=lib)

    assert out.split() == ["1", "22"]
    after = {p.name: p.stat().st_ino for p in mirror.glob("*.pyc")}
    fresh, edited = (next(n for n in after if n.startswith(stem)) for stem in ("fresh.", "edited."))
    assert after[fresh] == originals[fresh], "a valid linked file was compiled again"
    assert after[edited] != originals[edited], "a stale linked file was not replaced"
    assert (lib / "pkg" / "__pycache__" / edited).stat().st_ino == originals[edited]  # the original left alone
