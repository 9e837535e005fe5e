"""Bytecode already compiled beside an environment's sources, made visible under a bytecode prefix
(`sys.pycache_prefix`), where Python looks instead (tests/conftest.py)."""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path


def link_compiled(libs: Sequence[str], marker: Path) -> None:
    """Link (else copy) every `__pycache__/<module>.<cache tag>.pyc` below `libs` to where this interpreter's prefix
    puts that module's bytecode, unless `marker` exists; then create `marker`. A module with no source beside its
    bytecode, another interpreter's and an optimisation level's files are left out. Python checks each file against
    its source (size and time) before using it, as in `__pycache__`, and replaces a stale one rather than writing
    through the link. Stops quietly on an error of the file system: what is not linked is compiled on first use."""
    if sys.pycache_prefix is None or marker.exists():
        return
    suffix = f".{sys.implementation.cache_tag}.pyc"
    try:
        for lib in libs:
            for cache_dir, _dirs, files in os.walk(lib):
                if os.path.basename(cache_dir) != "__pycache__":
                    continue
                source_dir = os.path.dirname(cache_dir)
                for file in files:
                    stem = file.removesuffix(suffix)
                    source = os.path.join(source_dir, stem + ".py")
                    if stem == file or "." in stem or not os.path.exists(source):
                        continue
                    target = importlib.util.cache_from_source(source)
                    os.makedirs(os.path.dirname(target), exist_ok=True)
                    try:
                        os.link(os.path.join(cache_dir, file), target)
                    except FileExistsError:
                        pass
                    except OSError:  # another file system
                        shutil.copy2(os.path.join(cache_dir, file), target)
        marker.touch()
    except OSError:
        return


def link_environment() -> None:
    """`link_compiled` for this interpreter's environment (its site-packages), once per prefix: the marker is kept
    in the prefix. Nothing to do without a prefix."""
    if sys.pycache_prefix is None:
        return
    import sysconfig

    libs = dict.fromkeys((sysconfig.get_path("purelib"), sysconfig.get_path("platlib")))
    link_compiled(list(libs), Path(sys.pycache_prefix) / f".linked-{sys.implementation.cache_tag}")
