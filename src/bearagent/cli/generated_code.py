"""A bytecode cache for code the standard library generates and compiles in every process: the methods of
dataclasses, the forward references of string annotations, and the programs of regular expressions.

`@dataclass` writes each class's `__init__`, `__repr__`, `__eq__`, `__hash__` and the frozen `__setattr__` /
`__delattr__` as source text and `exec`s it: on CPython 3.11 that is ~1,000 `compile` calls for the ~200 classes a
`bearagent run` imports, ~190 ms of a scripted run's ~900 ms here (issue 37; docs/benchmarks.md). And every
annotation a pydantic model or `get_type_hints` reads from a module with `from __future__ import annotations` is a
text that `typing.ForwardRef` compiles (~650 of them for the domain's models alone). And every `re.compile` at a
module's top level parses its pattern and compiles it to the regular expression engine's program in Python code
(`re._parser`, `re._compiler`): ~45 ms of a scripted run, 10 ms of it one pattern of PyYAML's reader. Python caches
modules' bytecode in `__pycache__`, none of this, so every process compiled it again.

`install()`, called by the console script (`bearagent.cli.entry`) before any command module is imported, gives the
`dataclasses` module its own `exec` and the `typing` module its own `compile`: names a module's code looks up in its
globals before the builtins, so the standard library's code is not copied or changed. The stand-ins look the source
text up in a table of code objects, compile what is not there exactly as the real call would (no inherited
`__future__` flags, file name `<string>`; a text that does not compile raises as before and is not kept) and hand
the code object on: `exec` runs it with the same globals and namespace, `compile` returns it. The classes and
references built are the ones the real calls build; the table only skips the compiler. Any other call (code
objects, other file names, flags) goes to the real function unchanged. For regular expressions, `re`'s own
`_compiler` name is given a stand-in whose `compile` keeps, per pattern text and flags, the arguments the real
`re._compiler.compile` hands to the engine (`_sre.compile`: the program, its flags and groups), and rebuilds the
pattern from them; `re`'s own in-process cache is untouched. An entry is kept only when the pattern it rebuilds
equals the one the real `compile` returned (same program, flags and groups), and an entry the engine refuses falls
back to the real `compile`; bytes patterns and the `DEBUG` and `LOCALE` flags always take the real path. Only the
patterns compiled while a module is being imported go through the table (at most `MAX_PATTERN_CHARS` long): those
are the same texts in every process, while a pattern built at run time may come from a workspace's files (a hook's
matcher, a permission rule), and no workspace content is written to the table or grows it.

The table lives where Python keeps this package's bytecode (`__pycache__/`, or under `sys.pycache_prefix`), with the
same trust: it is written by the user's own processes beside the package's own code, and an entry is only ever the
compilation of its own key's text, so no text (a workspace's included) can make another text run other code. It is
read once, on first use (each code object is kept there as its own marshalled bytes and unmarshalled only when a
process looks its text up: a process uses ~1,300 of the table's entries, and unmarshalling all of them took ~25 ms
of every start), and written at exit, atomically, only when the process compiled something new and
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
import re
import sys
import typing
from types import CodeType, ModuleType
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from pathlib import Path

MAX_ENTRIES = 8192
"""The most source texts the table keeps (BearAgent itself builds ~1,000 in one process)."""
MAX_BYTES = 32 * 1024 * 1024
"""A table file larger than this is not read (BearAgent's own is ~1 MB)."""
MAX_PATTERN_CHARS = 4096
"""The longest regular expression the table keeps (the patterns modules compile at import are far shorter)."""

_exec = builtins.exec
_compile = builtins.compile

RegexEntry = tuple[int, list[int], int, dict[str, int], tuple[str | None, ...]]
"""What `re._compiler.compile` hands to `_sre.compile` after the pattern text: the flags (the pattern's inline flags
added), the program, the number of groups minus one, the group names and their reverse."""
Entry = CodeType | RegexEntry
Stored = bytes | RegexEntry
"""An entry as the file holds it: a code object marshalled on its own (read when its text is looked up), or a
regular expression's arguments."""

# `re`'s compiler and parser, and the engine (the C module `_sre`), which importing `re` has imported.
_re_compiler: ModuleType = sys.modules["re._compiler"]
_re_parser: ModuleType = sys.modules["re._parser"]
_engine: ModuleType = sys.modules["_sre"]
_REGEX_KEY = f"\0re\0{_engine.MAGIC}\0"
"""The prefix of a regular expression's key (then its flags, NUL, its text): the engine's version is part of it, and
no `exec` text (never a NUL) or annotation key (`\0eval\0`) starts with it."""
_REAL_PATH_FLAGS = re.DEBUG | re.LOCALE


class CodeTable:
    """The table of one file (`table_path()` unless given): read on first use, written back by `save` when it grew."""

    def __init__(self, path: Path | None | Literal["default"] = "default") -> None:
        self._path = path
        self.loaded: dict[str, Entry | bytes] | None = None
        self.used: dict[str, Entry] = {}
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
        key = source if mode == "exec" else f"\0{mode}\0{source}"
        entries = self._entries()
        code = entries.get(key)
        if type(code) is bytes:  # as the file holds it: unmarshalled on first use, and kept so
            code = _unmarshal_code(code)
            if code is not None:
                entries[key] = code
        if not isinstance(code, CodeType):
            code = _compile(source, "<string>", mode, dont_inherit=True)  # a SyntaxError is raised, not kept
            self._keep(key, code)
        self._used(key, code)
        return code

    def regex(self, pattern: str, flags: int) -> re.Pattern[str]:
        """`re._compiler.compile(pattern, flags)` for a text pattern, its program taken from the table when there."""
        flags = int(flags)  # `re` passes a plain int; a `RegexFlag` would neither key nor marshal as one
        key = f"{_REGEX_KEY}{flags}\0{pattern}"
        entry = self._entries().get(key)
        if isinstance(entry, tuple):
            try:
                compiled: re.Pattern[str] | None = _engine.compile(pattern, *entry)
            except Exception:  # a damaged entry: the engine refused it, compile as if absent
                compiled = None
            if compiled is not None:
                self._used(key, entry)
                return compiled
        real: re.Pattern[str] = _re_compiler.compile(pattern, flags)  # an invalid pattern raises here, not kept
        entry = _regex_entry(pattern, flags, real)
        if entry is not None:
            self._keep(key, entry)
            self._used(key, entry)
        return real

    def _entries(self) -> dict[str, Entry | bytes]:
        if self.loaded is None:
            path = self.path
            self.loaded = read_table(path) if path is not None else {}
        return self.loaded

    def _keep(self, key: str, entry: Entry) -> None:
        self.compiled += 1
        loaded = self._entries()
        if len(loaded) < MAX_ENTRIES:
            loaded[key] = entry

    def _used(self, key: str, entry: Entry) -> None:
        if len(self.used) < MAX_ENTRIES:
            self.used[key] = entry

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
            data = _header() + _dumps(self.loaded if len(self.loaded) < MAX_ENTRIES else self.used)
            if len(data) > MAX_BYTES:
                data = _header() + _dumps(self.used)
            if len(data) <= MAX_BYTES:
                write_atomically(path, data, _mode())


def _unmarshal_code(data: bytes) -> CodeType | None:
    """The code object a table entry holds, or None when the bytes are damaged or hold something else."""
    try:
        code: object = marshal.loads(data)
    except (EOFError, ValueError, TypeError):
        return None
    return code if isinstance(code, CodeType) else None


def _dumps(entries: dict[str, Entry] | dict[str, Entry | bytes]) -> bytes:
    """The table as the file holds it: each code object marshalled on its own (an entry never unmarshalled in this
    process is written back as it was read)."""
    stored: dict[str, Stored] = {
        key: marshal.dumps(entry) if isinstance(entry, CodeType) else entry for key, entry in entries.items()
    }
    return marshal.dumps(stored)


def _regex_entry(pattern: str, flags: int, real: re.Pattern[str]) -> RegexEntry | None:
    """What `re._compiler.compile(pattern, flags)` hands to the engine, or None when the pattern rebuilt from it is not
    equal to the real one (same program, flags and groups): an entry never differs from what the real call builds."""
    parsed = _re_parser.parse(pattern, flags)
    code: list[int] = [int(op) for op in _re_compiler._code(parsed, flags)]  # its opcodes are an int subclass
    groupindex: dict[str, int] = dict(parsed.state.groupdict)
    indexgroup: list[str | None] = [None] * parsed.state.groups
    for name, index in groupindex.items():
        indexgroup[index] = name
    entry: RegexEntry = (flags | parsed.state.flags, code, parsed.state.groups - 1, groupindex, tuple(indexgroup))
    try:
        rebuilt: re.Pattern[str] = _engine.compile(pattern, *entry)
    except Exception:  # this Python's engine takes other arguments: keep nothing
        return None
    same = rebuilt == real and rebuilt.groups == real.groups and rebuilt.groupindex == real.groupindex
    return entry if same else None


class _CompilerStandIn(ModuleType):
    """`re._compiler` as `re` sees it once installed: `compile` of a text pattern goes through the table, every other
    name (and every other call) is the real module's."""

    def __init__(self, table: CodeTable) -> None:
        super().__init__(_re_compiler.__name__, _re_compiler.__doc__)
        self._table = table

    def __getattr__(self, name: str) -> Any:
        return getattr(_re_compiler, name)

    def compile(self, p: Any, flags: int = 0) -> Any:
        if type(p) is str and not flags & _REAL_PATH_FLAGS and len(p) <= MAX_PATTERN_CHARS and _importing():
            return self._table.regex(p, flags)
        return _re_compiler.compile(p, flags)


def _importing() -> bool:
    """Whether the import system is running a module's code on this thread (a frame of `importlib._bootstrap` is on
    the stack): the patterns a module compiles at its top level, the same text in every process."""
    frame = sys._getframe(1)  # pyright: ignore[reportPrivateUsage]
    while frame is not None:
        if frame.f_code.co_filename.startswith("<frozen importlib._bootstrap"):
            return True
        frame = frame.f_back
    return False


def _header() -> bytes:
    """This Python's bytecode version and optimisation level (`-O`): code of another is never read."""
    from importlib.util import MAGIC_NUMBER

    return b"BAD2" + MAGIC_NUMBER + bytes((sys.flags.optimize,))


def read_table(path: Path) -> dict[str, Entry | bytes]:
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
    entries: dict[str, Entry | bytes] = {}
    for source, code in table.items():  # pyright: ignore[reportUnknownVariableType]
        if not isinstance(source, str):
            return {}
        if type(code) is bytes or (  # pyright: ignore[reportUnknownArgumentType]
            isinstance(code, tuple) and len(code) == 5 and source.startswith(_REGEX_KEY)  # pyright: ignore[reportUnknownArgumentType]
        ):  # a code object is checked when first looked up, a regular expression's entry by the engine when used
            entries[source] = code  # pyright: ignore[reportArgumentType]
        else:
            return {}
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
    """Give `dataclasses` the caching `exec`, `typing` the caching `compile` and `re` the caching `_compiler` (once a
    process; not where a module already has its own), and write the table at exit."""
    global _table
    if _table is not None:
        return
    _table = CodeTable()
    if "exec" not in vars(dataclasses):
        dataclasses.__dict__["exec"] = _table.exec
    if "compile" not in vars(typing):
        typing.__dict__["compile"] = _table.compile
    if vars(re).get("_compiler") is _re_compiler:
        _table.path  # noqa: B018 - found now: finding it imports `pathlib`, which compiles patterns of its own
        re.__dict__["_compiler"] = _CompilerStandIn(_table)
    atexit.register(_table.save)
