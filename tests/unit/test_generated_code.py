"""The bytecode cache of the methods `dataclasses` generates and of the annotations `typing.ForwardRef` compiles
(`bearagent.cli.generated_code`): a class built from the table behaves as one `exec` builds, and a reference resolves
as a compiled one does, across processes; a damaged, foreign or oversized table is ignored and rewritten;
`PYTHONDONTWRITEBYTECODE` is honoured; the table stays bounded."""

from __future__ import annotations

import importlib.util
import json
import marshal
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from bearagent._version import __version__
from bearagent.cli import generated_code
from bearagent.cli.generated_code import CodeTable, read_table

# A dataclass of every kind of generated method: frozen (`__setattr__`, `__delattr__`, `__hash__`), ordered, with
# defaults, a factory, an `InitVar`, `__post_init__` and keyword-only fields. The field names are unique to this test,
# so their source texts are in no table built before.
_PROBE = """
import dataclasses, json, sys
import bearagent.cli.generated_code as cache
cache.install()

@dataclasses.dataclass(frozen=True, order=True)
class ProbeCachedA:
    probe_alpha: int
    probe_beta: str = "b"
    probe_gamma: tuple[int, ...] = dataclasses.field(default_factory=lambda: (1,))
    probe_scale: dataclasses.InitVar[int] = 2
    probe_kw: int = dataclasses.field(default=7, kw_only=True)

    def __post_init__(self, probe_scale: int) -> None:
        object.__setattr__(self, "probe_alpha", self.probe_alpha * probe_scale)

@dataclasses.dataclass(slots=True)
class ProbeCachedB:
    probe_delta: float
    probe_eps: tuple[int, ...] = ()

a, a2 = ProbeCachedA(3, probe_kw=9), ProbeCachedA(3, probe_kw=9)
try:
    a.probe_beta = "x"
    frozen = False
except dataclasses.FrozenInstanceError:
    frozen = True
try:
    ProbeCachedA()
    missing = ""
except TypeError as exc:
    missing = str(exc)
b = ProbeCachedB(1.5)
b.probe_delta = 2.5

class ProbeHints:
    probe_zeta: "dict[str, list[ProbeCachedB]]"
    probe_eta: "ProbeCachedA | None"

import typing
hints = {name: repr(hint) for name, hint in typing.get_type_hints(ProbeHints).items()}
try:
    typing.ForwardRef("not valid (")
    bad = ""
except SyntaxError as exc:
    bad = type(exc).__name__
import re
probe_re = re.compile(r"(?P<probe_word>probe_[a-z]+)(?:-(\\d+))?", re.IGNORECASE)
found = probe_re.fullmatch("PROBE_word-42")
table = cache._table
print(json.dumps({
    "regex": [found.groupdict(), found.groups(), probe_re.groupindex == {"probe_word": 1}, probe_re.flags],
    "repr": [repr(a), repr(b)],
    "eq": a == a2, "hash": hash(a) == hash(a2), "lt": ProbeCachedA(1) < ProbeCachedA(2), "frozen": frozen,
    "missing": missing, "alpha": a.probe_alpha, "slots": ProbeCachedB.__slots__, "b": b.probe_delta,
    "hints": hints, "bad": bad,
    "compiled": table.compiled if table is not None else None,
    "path": str(table.path) if table is not None else None,
}))
"""


@pytest.fixture
def pycache(tmp_path: Path) -> Path:
    return tmp_path / "pycache"


def _writing_env(pycache: Path) -> dict[str, str]:
    """This environment for a child that may write bytecode, all of it under `pycache`."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(pycache)
    return env


def _probe(pycache: Path, *, dont_write: bool = False) -> dict[str, object]:
    env = _writing_env(pycache)
    if dont_write:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    done = subprocess.run(
        [sys.executable, "-c", _PROBE], capture_output=True, text=True, env=env, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, object] = json.loads(done.stdout)
    return result


def _table_file(result: dict[str, object], pycache: Path) -> Path:
    path = Path(str(result["path"]))
    assert path.is_relative_to(pycache), path  # beside the bytecode, under the prefix
    return path


def test_a_second_process_builds_the_same_classes_from_the_table_without_compiling(pycache: Path) -> None:
    first = _probe(pycache)
    table = _table_file(first, pycache)
    assert table.is_file(), sorted(str(p) for p in pycache.rglob("*"))
    assert isinstance(first["compiled"], int) and first["compiled"] > 0
    second = _probe(pycache)
    assert second["compiled"] == 0  # every method of every class and every reference came from the table
    assert {**second, "compiled": 0} == {**first, "compiled": 0}
    assert first["frozen"] is True and first["eq"] is True and first["hash"] is True and first["lt"] is True
    assert first["alpha"] == 6 and first["b"] == 2.5 and first["slots"] == ["probe_delta", "probe_eps"]
    assert "probe_alpha" in str(first["missing"])
    assert first["hints"] == {
        "probe_zeta": "dict[str, list[__main__.ProbeCachedB]]",
        "probe_eta": "__main__.ProbeCachedA | None",
    }
    assert first["bad"] == "SyntaxError"  # a text that does not compile raises as before, in both processes
    assert first["regex"] == [
        {"probe_word": "PROBE_word"},
        ["PROBE_word", "42"],
        True,
        int(re.IGNORECASE | re.UNICODE),
    ]
    assert first["repr"] == [
        "ProbeCachedA(probe_alpha=6, probe_beta='b', probe_gamma=(1,), probe_kw=9)",
        "ProbeCachedB(probe_delta=2.5, probe_eps=())",
    ]


def test_dont_write_bytecode_is_honoured(pycache: Path) -> None:
    result = _probe(pycache, dont_write=True)
    assert isinstance(result["compiled"], int) and result["compiled"] > 0
    assert not _table_file(result, pycache).exists()


def _source(name: str) -> str:
    return f"def __create_fn__():\n def {name}(self):\n  return {name!r}\n return {name}"


def _run(table: CodeTable, name: str) -> object:
    namespace: dict[str, object] = {}
    table.exec(_source(name), {}, namespace)
    make = namespace["__create_fn__"]
    assert callable(make)
    method = make()
    assert callable(method)
    return method(None)


def test_the_table_is_written_atomically_and_read_back(tmp_path: Path) -> None:
    path = tmp_path / "__pycache__" / "generated_code.cpython-311.marshal"
    table = CodeTable(path)
    assert _run(table, "first") == "first" and table.compiled == 1
    table.save()
    assert path.is_file() and [p.name for p in path.parent.iterdir()] == [path.name]  # no temporary left
    again = CodeTable(path)
    assert _run(again, "first") == "first" and again.compiled == 0
    assert sorted(read_table(path)) == [_source("first")]


_OURS = b"BAD2" + importlib.util.MAGIC_NUMBER + bytes((sys.flags.optimize,))


@pytest.mark.parametrize(
    "content",
    [
        b"",
        b"BAD2",
        b"not a table at all",
        b"BAD2" + b"\x00\x00\r\n" + marshal.dumps({"x": 1}),  # another Python's magic number
        b"BAD2" + importlib.util.MAGIC_NUMBER + bytes((sys.flags.optimize,)) + b"\xff\xfe garbage",
        b"BAD2" + importlib.util.MAGIC_NUMBER + bytes((sys.flags.optimize + 1,)) + marshal.dumps({}),
        _OURS + marshal.dumps([1, 2]),
        _OURS + marshal.dumps({"def f(): pass": "not code"}),
        _OURS + marshal.dumps({1: marshal.dumps(compile("1", "<string>", "exec"))}),
        # the first format (each code object unmarshalled with the table): read by no version since
        b"BADC"
        + importlib.util.MAGIC_NUMBER
        + bytes((sys.flags.optimize,))
        + marshal.dumps({"x = 1": compile("x = 1", "<string>", "exec")}),
        _OURS + marshal.dumps({"x = 1": compile("x = 1", "<string>", "exec")}),
    ],
    ids=[
        "empty",
        "header-only",
        "foreign",
        "other-python",
        "damaged",
        "other-optimize",
        "a-list",
        "not-code",
        "not-text",
        "first-format",
        "code-not-marshalled-on-its-own",
    ],
)
def test_a_damaged_or_foreign_table_is_ignored_and_rewritten(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "table.marshal"
    path.write_bytes(content)
    assert read_table(path) == {}
    table = CodeTable(path)
    assert _run(table, "fresh") == "fresh" and table.compiled == 1
    table.save()
    assert sorted(read_table(path)) == [_source("fresh")]


def test_only_the_entries_a_process_looks_up_are_unmarshalled_and_the_rest_are_written_back_as_read(
    tmp_path: Path,
) -> None:
    path = tmp_path / "table.marshal"
    first = CodeTable(path)
    for name in ("kept1", "kept2", "looked_up"):
        _run(first, name)
    first.save()
    stored = read_table(path)
    assert all(type(entry) is bytes for entry in stored.values())  # each code object marshalled on its own
    second = CodeTable(path)
    assert _run(second, "looked_up") == "looked_up" and _run(second, "new") == "new" and second.compiled == 1
    loaded = second.loaded or {}
    assert isinstance(loaded[_source("looked_up")], type(compile("", "<string>", "exec")))  # unmarshalled when used
    assert type(loaded[_source("kept1")]) is bytes and type(loaded[_source("kept2")]) is bytes  # never unmarshalled
    second.save()
    again = read_table(path)
    assert again[_source("kept1")] == stored[_source("kept1")] and again[_source("kept2")] == stored[_source("kept2")]
    third = CodeTable(path)
    assert [_run(third, name) for name in ("kept1", "kept2", "looked_up", "new")] == [
        "kept1",
        "kept2",
        "looked_up",
        "new",
    ]
    assert third.compiled == 0


@pytest.mark.parametrize(
    "damaged",
    [b"\xff\xfe not marshal", marshal.dumps("a text, not code"), marshal.dumps(compile("1", "<string>", "exec"))[:-3]],
    ids=["not-marshal", "not-code", "truncated"],
)
def test_a_damaged_code_entry_is_compiled_again_and_replaced(tmp_path: Path, damaged: bytes) -> None:
    path = tmp_path / "t.marshal"
    path.write_bytes(_OURS + marshal.dumps({_source("fixed"): damaged}))
    assert read_table(path) == {_source("fixed"): damaged}  # whole as a table: the entry is checked when used
    table = CodeTable(path)
    assert _run(table, "fixed") == "fixed" and table.compiled == 1
    table.save()
    assert marshal.loads(read_table(path)[_source("fixed")]) == (table.loaded or {})[_source("fixed")]  # pyright: ignore[reportArgumentType]


def test_a_table_over_the_size_limit_is_not_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "table.marshal"
    table = CodeTable(path)
    _run(table, "big")
    table.save()
    assert read_table(path) != {}
    monkeypatch.setattr(generated_code, "MAX_BYTES", path.stat().st_size - 1)
    assert read_table(path) == {}


def test_a_full_table_keeps_only_what_this_process_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(generated_code, "MAX_ENTRIES", 3)
    path = tmp_path / "table.marshal"
    old = CodeTable(path)
    for name in ("old1", "old2", "old3"):
        _run(old, name)
    old.save()
    assert len(read_table(path)) == 3
    new = CodeTable(path)
    assert _run(new, "old1") == "old1" and _run(new, "new1") == "new1"
    assert len(new.loaded or {}) == 3  # the full table takes nothing more in memory
    new.save()
    assert sorted(read_table(path)) == sorted([_source("old1"), _source("new1")])


def test_a_process_that_compiled_nothing_does_not_write(tmp_path: Path) -> None:
    path = tmp_path / "table.marshal"
    first = CodeTable(path)
    _run(first, "one")
    first.save()
    before = path.stat().st_mtime_ns
    os.utime(path, ns=(before - 10**9, before - 10**9))
    second = CodeTable(path)
    _run(second, "one")
    second.save()
    assert path.stat().st_mtime_ns == before - 10**9


def test_code_objects_and_missing_namespaces_behave_as_exec(tmp_path: Path) -> None:
    table = CodeTable(tmp_path / "t.marshal")
    namespace: dict[str, object] = {}
    table.exec(compile("x = 41 + 1", "<string>", "exec"), {}, namespace)
    assert namespace["x"] == 42 and table.compiled == 0
    seen_here = "the caller's"  # exec with no namespaces runs in the caller's: its locals, its globals
    table.exec("global _SEEN_BY_EXEC\n_SEEN_BY_EXEC = seen_here")
    assert globals().pop("_SEEN_BY_EXEC") == seen_here


_ENTRY = """
import dataclasses, json, sys
sys.argv = ["bearagent", *sys.argv[1:]]
from bearagent.cli import entry
try:
    entry()
except SystemExit:
    pass
import bearagent.cli.generated_code as cache
table = cache._table
import typing
installed = dataclasses.__dict__.get("exec"), typing.__dict__.get("compile")
cache.install()
print(json.dumps({
    "installed": table is not None and installed == (table.exec, table.compile),
    "once": (dataclasses.__dict__.get("exec"), typing.__dict__.get("compile")) == installed and cache._table is table,
}))
"""


@pytest.mark.parametrize("args", [["--help"], ["agents", "list"]])
def test_the_console_script_installs_it_once_before_a_command(tmp_path: Path, args: list[str]) -> None:
    done = subprocess.run(
        [sys.executable, "-c", _ENTRY, *args], capture_output=True, text=True, timeout=120, check=False, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1]) == {"installed": True, "once": True}


def test_version_does_not_import_dataclasses() -> None:
    code = "import sys; sys.argv = ['bearagent', '--version']\nfrom bearagent.cli import entry; entry()\n"
    code += "print('dataclasses' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["bearagent, version " + __version__, "False"]


def test_annotations_compile_as_the_real_compile_and_other_calls_pass_through(tmp_path: Path) -> None:
    path = tmp_path / "t.marshal"
    table = CodeTable(path)
    code = table.compile("dict[str, int] | None", "<string>", "eval")
    assert eval(code, {}) == (dict[str, int] | None) and table.compiled == 1
    assert table.compile("dict[str, int] | None", "<string>", "eval") is code and table.compiled == 1
    with pytest.raises(SyntaxError):
        table.compile("not valid (", "<string>", "eval")
    assert table.compiled == 1 and not any("not valid" in key for key in table.used)
    with pytest.raises(
        (SyntaxError, ValueError), match="null bytes"
    ):  # an exec text cannot reach an annotation's entry
        table.exec("\0eval\0dict[str, int] | None", {}, {})
    # what ForwardRef never asks for is compiled by the real compile and not kept
    other = table.compile("x = 1", "a_file.py", "exec")
    assert other.co_filename == "a_file.py"
    table.compile("1 + 1", "<string>", "eval", 0, False, 2)
    assert table.compiled == 1 and len(table.used) == 1
    # the same text as an exec source and as an annotation are two entries
    namespace: dict[str, object] = {}
    table.exec("dict", {}, namespace)
    assert len(table.used) == 2 and table.compiled == 2
    table.save()
    again = CodeTable(path)
    assert eval(again.compile("dict[str, int] | None", "<string>", "eval"), {}) == (dict[str, int] | None)
    assert again.compiled == 0


# Patterns of every kind the engine's program has: groups named and not, inline and given flags, lookarounds,
# backreferences, possessive and lazy repeats, classes, case folding and a large Unicode class like PyYAML's.
_PATTERNS: list[tuple[str, int]] = [
    (r"(?P<key>[a-z_][a-z0-9_]*)\s*=\s*(?P<value>.*)", 0),
    (r"(?i)ünïcödé|ß", 0),
    (r"^\s*#.*$", re.MULTILINE),
    (r"(?<=@)\w+(?!\.)", 0),
    (r"(a|b)\1{2,}?", re.DOTALL),
    (r"x*+y??", re.ASCII),
    (r"[^\x09\x0A\x0D\x20-\x7E\x85\xA0-\uD7FF\uE000-\uFFFD\U00010000-\U0010ffff]", 0),
    (
        r"""(?x) \d+  # digits
         (?:\.\d+)?""",
        0,
    ),
]
_SUBJECTS = ["a_b = 1", "ÜNÏCÖDÉ", "SS", " # c\nx", "@name.", "@name x", "abbb", "aab", "xxxy", "3.25", "\x01"]


def _matches(pattern: re.Pattern[str]) -> list[Any]:
    return [(m.span(), m.groups(), m.groupdict()) if (m := pattern.search(s)) else None for s in _SUBJECTS]


@pytest.mark.parametrize(("text", "flags"), _PATTERNS)
def test_a_pattern_from_the_table_is_the_one_re_compiles(tmp_path: Path, text: str, flags: int) -> None:
    real = re._compiler.compile(text, flags)  # pyright: ignore[reportAttributeAccessIssue, reportUnknownMemberType, reportUnknownVariableType]
    path = tmp_path / "t.marshal"
    first = CodeTable(path)
    compiled = first.regex(text, flags)
    assert compiled == real and first.compiled == 1
    first.save()
    again = CodeTable(path)
    rebuilt = again.regex(text, flags)
    assert again.compiled == 0  # from the table
    assert rebuilt == real and rebuilt.pattern == text and rebuilt.flags == real.flags  # pyright: ignore[reportUnknownMemberType]
    assert rebuilt.groups == real.groups and rebuilt.groupindex == real.groupindex  # pyright: ignore[reportUnknownMemberType]
    assert _matches(rebuilt) == _matches(real)  # pyright: ignore[reportUnknownArgumentType]


def test_an_invalid_pattern_raises_as_before_and_is_not_kept(tmp_path: Path) -> None:
    table = CodeTable(tmp_path / "t.marshal")
    with pytest.raises(re.error, match="missing \\)"):
        table.regex("(unclosed", 0)
    assert table.compiled == 0 and table.used == {}


def _damaged(entry: Any, damage: str) -> tuple[Any, ...]:
    if damage == "bad-opcode":  # a program the engine refuses
        return (entry[0], [9999, *entry[1][1:]], *entry[2:])
    if damage == "not-a-list":
        return (entry[0], "not a program", *entry[2:])
    return ("flags?", *entry[1:])


@pytest.mark.parametrize("damage", ["bad-opcode", "not-a-list", "bad-flags"])
def test_a_damaged_regex_entry_is_compiled_again_and_replaced(tmp_path: Path, damage: str) -> None:
    path = tmp_path / "t.marshal"
    first = CodeTable(path)
    first.regex(r"(?P<n>\d+)-x", 0)
    first.save()
    [(key, entry)] = read_table(path).items()
    path.write_bytes(_OURS + marshal.dumps({key: _damaged(entry, damage)}))
    again = CodeTable(path)
    pattern = again.regex(r"(?P<n>\d+)-x", 0)
    assert pattern.fullmatch("12-x") is not None and pattern.groupindex == {"n": 1}
    assert again.compiled == 1 and (again.loaded or {})[key] == entry  # compiled again, the damage replaced


# A module whose top level compiles patterns (as PyYAML's reader does), imported after `install()`; the script then
# compiles at run time what a workspace's settings could hold (a hook's matcher), and `re`'s Scanner.
_IMPORTED_PATTERNS = """
import re
TEXT = re.compile(r"probe_text_[0-9]+")
LONG = re.compile("(?:probe_long)?" + "x" * 5000)
BYTES = re.compile(rb"probe_bytes(\\d)")
LOCALE = re.compile(rb"probe_locale\\w", re.LOCALE)
"""
_STAND_IN = """
import json, re, sys
import bearagent.cli.generated_code as cache
cache.install()
installed = type(vars(re)["_compiler"]).__name__
def kept():
    return sorted(k.rsplit("\\0", 1)[1] for k in cache._table.used if k.startswith(cache._REGEX_KEY))
import probe_patterns as m
at_import = kept()
matcher = re.compile(sys.argv[1])
print(json.dumps({
    "installed": installed, "kept": at_import, "kept_after": kept(),
    "bytes": m.BYTES.match(b"probe_bytes7").group(1).decode(), "locale": bool(m.LOCALE.match(b"probe_localeA")),
    "text": bool(m.TEXT.fullmatch("probe_text_12")), "long": bool(m.LONG.fullmatch("x" * 5000)),
    "matcher": bool(matcher.fullmatch("mcp__probe_x__tool")),
    "scanner": re.Scanner([(r"\\d+", lambda s, t: int(t)), (r"\\s+", None)]).scan("1 22")[0],
}))
"""


def test_only_patterns_compiled_by_an_import_are_kept(tmp_path: Path) -> None:
    (tmp_path / "probe_patterns.py").write_text(_IMPORTED_PATTERNS)
    env = _writing_env(tmp_path / "pycache")
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), *sys.path])
    done = subprocess.run(
        [sys.executable, "-c", _STAND_IN, "mcp__probe_[a-z]+__.*"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {
        "installed": "_CompilerStandIn",
        "kept": ["probe_text_[0-9]+"],  # not bytes, LOCALE, or longer than MAX_PATTERN_CHARS
        "kept_after": ["probe_text_[0-9]+"],  # a pattern built at run time is never written to the table
        "bytes": "7",
        "locale": True,
        "text": True,
        "long": True,
        "matcher": True,
        "scanner": [1, 22],
    }
