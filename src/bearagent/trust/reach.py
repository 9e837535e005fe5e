"""What a hook or MCP server command actually executes inside the workspace: the files it reaches, followed.

Trust fingerprints these files (`collector.Collector.files_run_by`), and a command hook re-checks them right before
each execution (`CodePins`), so the model cannot change what trusted code runs: not the script the command names,
nor what that script reaches. Starting from the command's words (a `sh -c` string split again):

- a word that names an existing file inside the workspace (relative to the command's directory, or through `PATH`
  when the directory on `PATH` is inside the workspace), and, when it is a symlink (`node_modules/.bin/x`), its
  target;
- in each such file: its `#!` interpreter (`.venv/bin/python`, `/usr/bin/env node`), sourced shell files
  (`. lib`, `source lib`), and every word that names a workspace file relative to the file's directory or the
  workspace when that file is code: a script by its extension (`.sh`, `.py`, `.js`, `.mk`, ...) or an executable
  (a data file the script writes, `hook-log.jsonl`, is not followed; it changes at every run), Python imports (`import a.b`, `from .x import y`, resolved next to the
  file, at the workspace root and in the site-packages of a workspace virtual environment the file belongs to),
  and JavaScript `require`/`import` specifiers: relative ones, and bare ones (`require('pkg')`, in a file or a
  `node -e` string) as node resolves them in the workspace's `node_modules` (the package's `package.json` and the
  file it loads; a nearer `node_modules/<pkg>` that would shadow it, recorded as missing);
- `make` also reaches the workspace's `Makefile` (or `-f FILE`); a task runner or package manager (`npm`, `npx`,
  `yarn`, `pnpm`, `bun`, `uv`, `poetry`, `tox`, `pytest`, `just`, `cargo`, `gradle`, `mvn`, `pre-commit`, ...)
  reaches the files that decide what it runs (`package.json`, `.npmrc`, `pyproject.toml`, `conftest.py`,
  `justfile`, `Cargo.toml`, `build.rs`, ...: `_RECIPES`), present or missing.

A module that does not exist yet is recorded as missing: creating it (a `helper.py` that shadows a module) changes
the fingerprint too. Bounded: `MAX_FILES` files, `MAX_SCAN_BYTES` of each scanned. What a program discovers on its
own (a tool's config file found by name, data it reads) is not followed: run such hooks in the sandbox
(`sandbox.hooks: true`), which confines whatever they run.

Why it is over 400 lines: it is one rule (what a command reaches) followed through the ways code reaches code (shell
words and sourcing, interpreters, Python imports, node's resolution, task runners' recipe files); split by language
the parts would share the bounded walk and the missing-file records, and each would be read only with the others.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

from bearagent.trust.file_digest import hash_file

MAX_FILES = 2000
MAX_SCAN_BYTES = 512 * 1024
MISSING = "missing"
_PROJECT_VARS = ("CLAUDE_PROJECT_DIR", "BEARAGENT_PROJECT_DIR")
_WORD = re.compile(r"[A-Za-z0-9_@%+=:,./~$-]+")
_PY_IMPORT = re.compile(r"^\s*(?:from\s+(\.*[\w.]*)\s+import\s+([\w, ]+)|import\s+([\w., ]+))", re.MULTILINE)
_JS_SPEC = re.compile(r"""(?:require\s*\(\s*|import\s*\(\s*|from\s+|import\s+)["'](\.{1,2}/[^"'\n]+)["']""")
_JS_BARE = re.compile(
    r"""(?:require\s*\(\s*|import\s*\(\s*|from\s+|import\s+)["']((?:@[\w.-]+/)?[\w:][\w.:-]*)(/[^"'\n]*)?["']"""
)
MAX_BARE_SPECS = 200
_MAKE = ("make", "gmake")
_NODE_RECIPES = ("package.json", ".npmrc", ".yarnrc", ".yarnrc.yml", ".pnpmfile.cjs", "bunfig.toml")
_PY_RECIPES = ("pyproject.toml", "setup.cfg", "setup.py", "uv.toml", "poetry.toml", "tox.ini", "noxfile.py")
_RECIPES: dict[str, tuple[str, ...]] = {
    **dict.fromkeys(("npm", "npx", "yarn", "pnpm", "pnpx", "bun", "bunx"), _NODE_RECIPES),
    **dict.fromkeys(("uv", "uvx", "poetry", "pdm", "hatch", "tox", "nox", "pipenv"), (*_PY_RECIPES, "Pipfile")),
    "pytest": ("conftest.py", "pytest.ini", *_PY_RECIPES),
    **dict.fromkeys(("just",), ("justfile", "Justfile", ".justfile")),
    "task": ("Taskfile.yml", "Taskfile.yaml", "taskfile.yml"),
    **dict.fromkeys(("cargo",), ("Cargo.toml", "build.rs", ".cargo/config.toml", ".cargo/config")),
    "rake": ("Rakefile", "rakefile"),
    **dict.fromkeys(("gradle", "gradlew"), ("build.gradle", "build.gradle.kts", "settings.gradle", "gradlew")),
    **dict.fromkeys(("mvn", "mvnw"), ("pom.xml", "mvnw", ".mvn/jvm.config")),
    "pre-commit": (".pre-commit-config.yaml",),
    "lefthook": ("lefthook.yml", ".lefthook.yml"),
}
"""Task runners and package managers, and the workspace files (at the workspace root and the command's directory)
that decide what they execute: a hook `npm run lint` runs whatever `package.json` says `lint` is, `.npmrc` can set
`node-options=--require ./x.js` or `script-shell`. Each is fingerprinted (and scanned for the code it names);
missing, it is recorded as missing, so creating one changes the fingerprint too."""
_CODE_NAME = re.compile(r"\.(sh|bash|zsh|py|js|mjs|cjs|ts|rb|pl|mk|mak|ps1)$")
_SOURCED = re.compile(r"(?:^|[;&|({]|\bthen|\bdo)\s*(?:source|\.)\s+([^\s;&|)]+)", re.MULTILINE)
_JS_EXTS = ("", ".js", ".mjs", ".cjs", ".ts", ".json", "/index.js", "/index.mjs")


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def split_words(command: str) -> list[str]:
    """A command line's words; each word with spaces (a `sh -c` string) split again."""
    pending = [command]
    out: list[str] = []
    while pending and len(out) < 4096:
        text = pending.pop(0)
        try:
            words = shlex.split(text, comments=True)
        except ValueError:
            words = text.split()
        for word in words:
            if word != text and any(c.isspace() for c in word):
                pending.append(word)
            else:
                out.append(word)
    return out


@dataclass
class _Walk:
    root: Path
    path_dirs: tuple[Path, ...]
    found: dict[Path, str] = field(default_factory=dict[Path, str])
    queue: list[Path] = field(default_factory=list[Path])
    texts: list[str] = field(default_factory=list[str])
    """The beginnings of the scanned files, for `discovered_code` (which tool chains the command reaches)."""

    def add(self, path: Path, *, missing_ok: bool = False) -> bool:
        """Record `path` (absolute, lexical) when inside the workspace; queue it for scanning. Whether it exists."""
        path = Path(os.path.normpath(path))
        if not _inside(path, self.root) or len(self.found) >= MAX_FILES:
            return False
        if path in self.found:
            return self.found[path] != MISSING
        try:
            is_file = path.is_file()
        except OSError:
            is_file = False
        if not is_file:
            if missing_ok and not os.path.lexists(path):
                self.found[path] = MISSING
            return False
        self.found[path] = ""
        self.queue.append(path)
        real = Path(os.path.realpath(path))
        if real != path:
            self.add(real)
        return True

    def word(self, word: str, bases: Iterable[Path], *, executable_only: bool = False) -> None:
        for var in _PROJECT_VARS:
            word = word.replace("${" + var + "}", str(self.root)).replace("$" + var, str(self.root))
        if word.startswith("-") and "=" in word:
            word = word.split("=", 1)[1]
        if not word or word.startswith("-") or len(word) > 4096:
            return
        candidates = [Path(word)] if word.startswith("/") else []
        if not candidates and "/" not in word:
            candidates += [directory / word for directory in self.path_dirs]
        if not word.startswith("/"):
            candidates += [base / word for base in bases]
        for candidate in candidates:
            if executable_only and not os.access(candidate, os.X_OK):
                continue
            if self.add(candidate):
                return

    def words(self, words: Sequence[str], bases: Sequence[Path]) -> None:
        for index, word in enumerate(words):
            self.word(word, bases)
            name = os.path.basename(word)
            if name in _MAKE:
                rest = words[index + 1 :]
                named = [rest[i + 1] for i, w in enumerate(rest[:-1]) if w in ("-f", "--file", "--makefile")]
                for makefile in named or ["GNUmakefile", "makefile", "Makefile"]:
                    self.word(makefile, bases)
            for recipe in _RECIPES.get(name, ()):
                for base in dict.fromkeys((*bases, self.root)):
                    self.add(base / recipe, missing_ok=True)

    def scan(self, path: Path) -> None:
        try:
            with path.open("rb") as handle:
                data = handle.read(MAX_SCAN_BYTES)
        except OSError:
            return
        if b"\0" in data[:8192]:
            return  # a binary: its content is fingerprinted, not read for names
        text = data.decode("utf-8", "replace")
        self.texts.append(text[:65536])
        bases = [path.parent, self.root]
        if text.startswith("#!"):
            self.words(split_words(text[2:].splitlines()[0]), bases)
        for match in _WORD.finditer(text):
            word = match.group(0).strip(",:;=")
            if _CODE_NAME.search(word):
                self.word(word, bases)
            elif "/" in word:
                self.word(word, bases, executable_only=True)  # a data file the script writes is not code
        for sourced in _SOURCED.findall(text):
            self.word(sourced, bases)
        if path.suffix in (".py", "") or "python" in text[:200]:
            self._python(path, text)
        if path.suffix in (".js", ".mjs", ".cjs", ".ts") or "node" in text[:200]:
            self.javascript(path.parent, text)

    def javascript(self, directory: Path, text: str) -> None:
        """The modules JavaScript `text` (a file in `directory`, or a `node -e` string run there) loads: relative
        specifiers next to it, and bare ones (`require('pkg')`, `import x from '@scope/pkg/sub'`) as node resolves
        them: `node_modules/<pkg>` in `directory` and each parent up to the workspace root, the first that exists
        (its `package.json` and the file it loads), the nearer places recorded as missing (a package planted there
        would shadow it)."""
        for spec in _JS_SPEC.findall(text):
            for ext in _JS_EXTS:
                if self.add(directory / f"{spec}{ext}"):
                    break
        for package, sub in _JS_BARE.findall(text)[:MAX_BARE_SPECS]:
            if package.startswith("node:"):
                continue
            current = directory
            while _inside(current, self.root):
                folder = current / "node_modules" / package
                if os.path.lexists(folder) or any(
                    self.add(folder.with_name(folder.name + ext)) for ext in (".js", ".json", ".mjs", ".cjs")
                ):
                    self.add(folder / "package.json", missing_ok=True)
                    self._package_entry(folder, sub.lstrip("/"))
                    break
                for shadow in (
                    *(folder.with_name(folder.name + ext) for ext in (".js", ".json")),
                    folder / "package.json",
                    folder / "index.js",
                    folder / "index.json",
                ):
                    self.add(shadow, missing_ok=True)  # planted here, node would load it first
                if current == self.root:
                    break
                current = current.parent

    def _package_entry(self, folder: Path, sub: str) -> None:
        if sub:
            for ext in _JS_EXTS:
                if self.add(folder / f"{sub}{ext}"):
                    return
            return
        main = "index.js"
        with contextlib.suppress(OSError, ValueError):
            with (folder / "package.json").open("rb") as handle:
                data = json.loads(handle.read(MAX_SCAN_BYTES))
            if isinstance(data, dict):
                for key in ("main", "module"):
                    value = cast(dict[str, object], data).get(key)
                    if isinstance(value, str) and value:
                        main = value
                        break
        for ext in _JS_EXTS:
            if self.add(folder / f"{main}{ext}"):
                return

    def _python(self, path: Path, text: str) -> None:
        roots = [path.parent, self.root, *_site_packages(path, self.root)]
        for relative, names, plain in _PY_IMPORT.findall(text):
            modules: list[tuple[int, str]] = []
            if plain:
                modules += [(0, m.strip().split(" ")[0]) for m in plain.split(",") if m.strip()]
            else:
                dots = len(relative) - len(relative.lstrip("."))
                base = relative.lstrip(".")
                modules.append((dots, base))
                modules += [(dots, f"{base}.{n.strip()}" if base else n.strip()) for n in names.split(",") if n.strip()]
            for dots, module in modules:
                self._module(path, roots, dots, module)

    def _module(self, path: Path, roots: Sequence[Path], dots: int, module: str) -> None:
        if not module and not dots:
            return
        parts = [p for p in module.split(".") if p]
        if dots:
            base = path.parent
            for _ in range(dots - 1):
                base = base.parent
            search = [base]
        else:
            search = list(roots)
        for base in search:
            target = base.joinpath(*parts) if parts else base
            for candidate in (target.with_name(target.name + ".py"), target / "__init__.py"):
                if self.add(candidate):
                    return
        if not dots and parts:  # not found: a file created later would shadow it next to the script
            self.add(path.parent / f"{parts[0]}.py", missing_ok=True)


def _site_packages(path: Path, root: Path) -> list[Path]:
    """The site-packages of the workspace virtual environment `path` lies in (its `pyvenv.cfg` above it)."""
    for parent in path.parents:
        if not _inside(parent, root) or parent == root:
            break
        if (parent / "pyvenv.cfg").is_file():
            with contextlib.suppress(OSError):
                return sorted((parent / "lib").glob("python*/site-packages"))
            return []
    return []


def reached_files(
    words: Sequence[str],
    root: Path,
    *,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    discovered: bool = False,
) -> dict[str, str]:
    """The workspace files `words` (a command line, or `[sh, -c, string]`) reaches, each with its content hash
    (`missing` for a module that would be picked up if created), by workspace-relative path. `discovered`: also
    the code its tool chains find on their own (`discovered_code`), as pattern keys."""
    real_root = Path(os.path.realpath(root))
    path_value = (env or {}).get("PATH", "")
    base = Path(os.path.realpath(cwd)) if cwd is not None else real_root
    path_dirs = tuple(
        Path(os.path.normpath(base / d))
        for d in path_value.split(os.pathsep)
        if d and _inside(Path(os.path.normpath(base / d)), real_root)
    )
    walk = _Walk(real_root, path_dirs)
    expanded: list[str] = []
    for word in words:
        expanded += split_words(word) if any(c.isspace() for c in word) else [word]
    walk.words(expanded, [base])
    inline = " ".join(expanded)
    if _JS_CHAIN.search(inline):
        walk.javascript(base, inline)  # `node -e "require('pkg')"`: the packages it loads from the workspace
    while walk.queue:
        walk.scan(walk.queue.pop(0))
    out: dict[str, str] = {}
    for path, state in sorted(walk.found.items()):
        rel = path.relative_to(real_root).as_posix()
        out[rel] = MISSING if state == MISSING else hash_file(path)
    if discovered:
        text = "\n".join([" ".join(expanded), *walk.texts, *(p.as_posix() for p in walk.found)])
        out.update(discovered_code(real_root, text))
    return out


_JS_CHAIN = re.compile(
    r"(?:^|[\s/\"'])(?:node|npx|npm|pnpm|yarn|bunx?|deno|prettier|eslint|node_modules)(?:$|[\s/\"'])"
)
_PY_CHAIN = re.compile(
    r"(?:^|[\s/\"'])(?:python[0-9.]*|pytest|uv|uvx|poetry|pipx?|tox|nox|\.venv|venv)(?:$|[\s/\"'])|\.py\b"
)
_PYTEST = re.compile(r"pytest|\btox\b|\bnox\b|\bmake\b|Makefile")
JS_CONFIG_CODE = re.compile(r"^(?:\.[\w-]+rc|[\w.-]+\.config)\.(?:js|cjs|mjs|ts|cts|mts)$")
"""Config files JavaScript tools find by name and execute (`prettier.config.js`, `.eslintrc.cjs`, `vite.config.ts`)."""
PY_DISCOVERED = ("conftest.py",)
"""Code Python tools find by name (pytest's `conftest.py`, in any directory of the tests)."""
MAX_DISCOVERY_DIRS = 20_000
NONE_DISCOVERED = "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
"""The digest of a discovered-code kind when no such file exists."""
_NOT_WALKED = frozenset({".git", "node_modules", ".venv", "venv", "__pycache__", ".tox", ".mypy_cache", "target"})


def discovered_code(root: Path, text: str) -> dict[str, str]:
    """Code a command's tool chains discover on their own in the workspace, which following its words does not
    find: for a JavaScript chain every config-as-code file (`JS_CONFIG_CODE`) anywhere, for a Python one running
    tests (pytest, tox, nox, make) every `conftest.py`, and for any Python one each workspace virtual environment's `*.pth`, `sitecustomize.py` and `usercustomize.py` (run
    at every start of its interpreter). One key per kind (`**/<kind>`), whose value digests every such file's path
    and content: creating, changing or removing one changes it. Bounded by `MAX_DISCOVERY_DIRS` directories."""
    js, py = bool(_JS_CHAIN.search(text)), bool(_PY_CHAIN.search(text))
    tests = py and _PYTEST.search(text) is not None  # conftest.py is pytest's: not every Python program's
    if not js and not py:
        return {}
    import hashlib

    found: dict[str, list[str]] = {"js": [], "py": [], "site": []}
    stack, budget = [root], MAX_DISCOVERY_DIRS
    while stack and budget > 0:
        current = stack.pop()
        budget -= 1
        try:
            entries = list(os.scandir(current))
        except OSError:
            continue
        for entry in entries:
            with contextlib.suppress(OSError):
                if entry.is_dir(follow_symlinks=False):
                    if entry.name not in _NOT_WALKED:
                        stack.append(Path(entry.path))
                    if py and (Path(entry.path) / "pyvenv.cfg").is_file():
                        for site in sorted(Path(entry.path).glob("lib/python*/site-packages")):
                            for item in sorted(os.scandir(site), key=lambda e: e.name):
                                if item.name.endswith(".pth") or item.name in ("sitecustomize.py", "usercustomize.py"):
                                    found["site"].append(item.path)
                elif js and JS_CONFIG_CODE.match(entry.name):
                    found["js"].append(entry.path)
                elif tests and entry.name in PY_DISCOVERED:
                    found["py"].append(entry.path)
    out: dict[str, str] = {}
    names = {"js": "**/*.config.js and .*rc.js", "py": "**/conftest.py", "site": "**/site-packages/*.pth"}
    for kind, paths in found.items():
        if (kind == "js" and not js) or (kind == "py" and not tests) or (kind == "site" and not py):
            continue
        digest = hashlib.sha256()
        for path in sorted(paths):
            digest.update(Path(path).relative_to(root).as_posix().encode() + b"\0")
            digest.update(hash_file(Path(path)).encode() + b"\0")
        out[names[kind]] = "sha256:" + digest.hexdigest()
    return out


@dataclass
class CodePins:
    """What each command hook or stdio MCP server reached when the run started, to compare with right before each
    execution (or start, or restart)."""

    root: Path
    env: Mapping[str, str]
    pins: dict[tuple[str, ...], dict[str, str]] = field(default_factory=dict[tuple[str, ...], dict[str, str]])

    def pin(self, words: Sequence[str], cwd: Path | None = None) -> None:
        key = (str(cwd or ""), *words)
        if key not in self.pins:
            self.pins[key] = reached_files(words, self.root, cwd=cwd, env=self.env, discovered=True)

    def changed(self, words: Sequence[str], cwd: Path | None = None) -> str | None:
        """The first reached file that differs from the pinned state (changed, created or removed), or None."""
        pinned = self.pins.get((str(cwd or ""), *words))
        if pinned is None:
            return None
        now = reached_files(words, self.root, cwd=cwd, env=self.env, discovered=True)
        differ = [rel for rel in sorted(set(pinned) | set(now)) if pinned.get(rel) != now.get(rel)]

        def rank(rel: str) -> tuple[int, int]:
            before, after = pinned.get(rel, MISSING), now.get(rel, MISSING)
            kind = 0 if MISSING not in (before, after) else 1 if after != MISSING else 2  # changed, created, gone
            return kind, int((self.root / rel).is_symlink())  # name the file, not a link to it

        return min(differ, key=rank) if differ else None
