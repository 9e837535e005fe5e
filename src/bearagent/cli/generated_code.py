"""A bytecode cache for code the standard library generates and compiles in every process: the methods of
dataclasses, and the forward references of string annotations.

`@dataclass` writes each class's `__init__`, `__repr__`, `__eq__`, `__hash__` and the frozen `__setattr__` /
`__delattr__` as source text and `exec`s it: on CPython 3.11 that is ~1,000 `compile` calls for the ~200 classes a
`bearagent run` imports, ~190 ms of a scripted run's ~900 ms here (issue 37; docs/benchmarks.md). And every
annotation a pydantic model or `get_type_hints` reads from a module with `from __future__ import annotations` is a
text that `typing.ForwardRef` compiles (~650 of them for the domain's models alone). Python caches modules' bytecode
in `__pycache__`, not this code, so every process compiled it again.

`install()`, called by the console script (`bearagent.cli.entry`) before any command module is imported, gives the
`dataclasses` module its own `exec` and the `typing` module its own `compile`: names a module's code looks up in its
globals before the builtins, so the standard library's code is not copied or changed. The stand-ins look the source
text up in a table of code objects, compile what is not there exactly as the real call would (no inherited
`__future__` flags, file name `<string>`; a text that does not compile raises as before and is not kept) and hand
the code object on: `exec` runs it with the same globals and namespace, `compile` returns it. The classes and
references built are the ones the real calls build; the table only skips the compiler. Any other call (code
objects, other file names, flags) goes to the real function unchanged.

The table lives where Python keeps this package's bytecode (`__pycache__/`, or under `sys.pycache_prefix`), with the
same trust: it is written by the user's own processes beside the package's own code, and an entry is only ever the
compilation of its own key's text, so no text (a workspace's included) can make another text run other code. It is
read once, on first use, and written at exit, atomically, only when the process compiled something new and
bytecode writing is allowed (`PYTHONDONTWRITEBYTECODE` and `-B` are honoured, as for `.pyc`). A table of another
Python (its magic number), a damaged file or one of an unexpected shape is ignored and rewritten. Bounded: at most
`MAX_ENTRIES` texts and `MAX_BYTES` on disk; past that, only what this process used is kept.
"""

from __future__ import annotations

import atexit
import builtins
import contextlib
import dataclasses
import marshal
import os
import sys
import typing
from types import CodeType
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from pathlib import Path

MAX_ENTRIES = 8192
"""The most source texts the table keeps (BearAgent itself builds ~1,000 in one process)."""
MAX_BYTES = 32 * 1024 * 1024
"""A table file larger than this is not read (BearAgent's own is ~1 MB)."""

_exec = builtins.exec
_compile = builtins.compile


class CodeTable:
    """The table of one file (`table_path()` unless given): read on first use, written back by `save` when it grew."""

    def __init__(self, path: Path | None | Literal["default"] = "default") -> None:
        self._path = path
        self.loaded: dict[str, CodeType] | None = None
        self.used: dict[str, CodeType] = {}
        self.compiled = 0

    @property
    def path(self) -> Path | None:
        if isinstance(self._path, str):  # "default": found on first use, so installing imports nothing more
            self._path = table_path()
        return self._path

    def code(self, source: str, mode: Literal["exec", "eval"] = "exec") -> CodeType:
        """The code of `source` compiled as `compile(source, "<string>", mode)` from a module without `__future__`
        imports compiles it. An `eval` text is kept under a key no source text can be (NUL is never in one)."""
        if "\0" in source:  # never in a text these callers make; compile refuses it as it always did
            return _compile(source, "<string>", mode, dont_inherit=True)
        if self.loaded is None:
            path = self.path
            self.loaded = read_table(path) if path is not None else {}
        key = source if mode == "exec" else f"\0{mode}\0{source}"
        code = self.loaded.get(key)
        if code is None:
            code = _compile(source, "<string>", mode, dont_inherit=True)  # a SyntaxError is raised, not kept
            self.compiled += 1
            if len(self.loaded) < MAX_ENTRIES:
                self.loaded[key] = code
        if len(self.used) < MAX_ENTRIES:
            self.used[key] = code
        return code

    def exec(self, source: str | bytes | CodeType, globals: Any = None, locals: Any = None, /) -> None:
        """`exec` as `dataclasses` calls it; anything but source text goes to the real `exec` unchanged."""
        if globals is None:  # as `exec` does: the caller's namespaces, not this module's
            frame = sys._getframe(1)  # pyright: ignore[reportPrivateUsage]
            globals = frame.f_globals
            if locals is None:
                locals = frame.f_locals
        _exec(self.code(source) if type(source) is str else source, globals, locals)

    def compile(
        self, source: Any, filename: Any, mode: str, flags: int = 0, dont_inherit: bool = False, optimize: int = -1
    ) -> Any:
        """`compile` as `typing.ForwardRef` calls it (an annotation's text, `"<string>"`, `"eval"`); any other call goes
        to the real `compile` unchanged."""
        if type(source) is str and filename == "<string>" and mode == "eval" and not flags and optimize == -1:
            return self.code(source, "eval")
        return _compile(source, filename, mode, flags, dont_inherit, optimize)

    def save(self) -> None:
        """Write the table if this process compiled something and may write bytecode; never raises.

        A full table (texts of older versions pile up) is replaced by what this process used."""
        path = self.path
        if path is None or self.loaded is None or not self.compiled or sys.dont_write_bytecode:
            return
        with contextlib.suppress(Exception):
            data = _header() + marshal.dumps(self.loaded if len(self.loaded) < MAX_ENTRIES else self.used)
            if len(data) > MAX_BYTES:
                data = _header() + marshal.dumps(self.used)
            if len(data) <= MAX_BYTES:
                write_atomically(path, data, _mode())


def _header() -> bytes:
    """This Python's bytecode version and optimisation level (`-O`): code of another is never read."""
    from importlib.util import MAGIC_NUMBER

    return b"BADC" + MAGIC_NUMBER + bytes((sys.flags.optimize,))


def read_table(path: Path) -> dict[str, CodeType]:
    """The table at `path`, or an empty one when it is absent, too large, damaged or another Python's."""
    try:
        with path.open("rb") as file:
            if os.fstat(file.fileno()).st_size > MAX_BYTES:
                return {}
            data = file.read(MAX_BYTES + 1)
    except OSError:
        return {}
    header = _header()
    if not data.startswith(header):
        return {}
    try:
        table: object = marshal.loads(data[len(header) :])  # one read, then loads: marshal.load(file) is ~10x slower
    except (EOFError, ValueError, TypeError):
        return {}
    if not isinstance(table, dict):
        return {}
    entries: dict[str, CodeType] = {}
    for source, code in table.items():  # pyright: ignore[reportUnknownVariableType]
        if not isinstance(source, str) or not isinstance(code, CodeType):
            return {}
        entries[source] = code
    return entries


def _mode() -> int:
    """The mode Python gives a `.pyc`: its source's, writable by the owner."""
    return (os.stat(__file__).st_mode | 0o200) & 0o666


def write_atomically(path: Path, data: bytes, mode: int) -> None:
    import tempfile

    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as file:
            file.write(data)
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise


def table_path() -> Path | None:
    """Where this Python keeps the table: beside this package's bytecode, honouring `sys.pycache_prefix`."""
    from importlib.util import cache_from_source
    from pathlib import Path

    try:
        pyc = cache_from_source(__file__)
    except NotImplementedError:  # no cache tag: this Python keeps no bytecode
        return None
    return Path(pyc).with_suffix(".marshal")


_table: CodeTable | None = None


def install() -> None:
    """Give `dataclasses` the caching `exec` and `typing` the caching `compile` (once a process; not where either
    module already has its own), and write the table at exit."""
    global _table
    if _table is not None:
        return
    _table = CodeTable()
    if "exec" not in vars(dataclasses):
        dataclasses.__dict__["exec"] = _table.exec
    if "compile" not in vars(typing):
        typing.__dict__["compile"] = _table.compile
    atexit.register(_table.save)
