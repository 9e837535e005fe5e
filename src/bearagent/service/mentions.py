"""`@path` mentions in a prompt the user typed (`bearagent run`, the interactive session), as in Claude Code.

`explain @src/app.py` sends the prompt with the file's content attached after it, in a `<file path="...">` block;
`@src/` (a directory) attaches a listing of its entries instead. The file is read exactly as the Read tool reads it:
through the file tools' path resolution (`tools/roots.py`: inside the workspace or an additional directory only, no
`..` out, no symlink out, regular files only), and a path a `permissions.deny` rule denies to Read is refused.

What counts as a mention: `@` at the start of the prompt or after whitespace, followed by a path. A mention that
names nothing stays as typed, as in Claude Code: `@alice`, and `@types/node` or `@angular/core` (package names
people write in prompts all the time); one that looks like a path (it has a `/` or a `.`) gets a note saying it was
sent as text, so a typo does not pass unnoticed. `\\@path` sends the text without the note (the backslash is
dropped). Bounded: at most `MAX_MENTIONS` files, `MAX_FILE_BYTES` of one file (a longer
file is cut, with a note), `MAX_TOTAL_BYTES` in all, and `MAX_LISTING_ENTRIES` entries of a directory.

Every refusal is a `BearAgentError` (`invalid_request`, `mention_refused`) with the path and the fix; the caller
shows it before anything runs.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from bearagent.domain.errors import BearAgentError, ErrorInfo
from bearagent.tools.paths import PathRefused
from bearagent.tools.permissions import PermissionRules
from bearagent.tools.roots import WorkspaceRoots

if TYPE_CHECKING:
    from bearagent.workspace import LoadedWorkspace

MAX_MENTIONS = 20
MAX_FILE_BYTES = 100 * 1024
MAX_TOTAL_BYTES = 256 * 1024
MAX_LISTING_ENTRIES = 200
MAX_MENTION_CHARS = 1_024

MENTION = re.compile(r"(?:(?<=\s)|^)(\\?)@([A-Za-z0-9_./~-][^\s`'\"<>|;&()]*)", re.MULTILINE)
_TRAILING = ".,:;!?"
_SKIP_NAMES = frozenset({".git"})


@dataclass
class Mentions:
    """A prompt with its mentions expanded: `prompt` is what is sent, `attached` the paths attached, `notes` what
    the user should be told (a file cut to its bound)."""

    prompt: str
    attached: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()


@dataclass
class _Collected:
    blocks: list[str] = field(default_factory=lambda: [])
    attached: list[str] = field(default_factory=lambda: [])
    notes: list[str] = field(default_factory=lambda: [])
    size: int = 0


def _refused(path: str, why: str, fix: str) -> BearAgentError:
    shown = path if len(path) <= 200 else path[:200] + "…"
    return BearAgentError(
        ErrorInfo.of("invalid_request", "mention_refused", f"@{shown}: {why}", path=shown),
        hint=fix,
    )


def _looks_like_path(ref: str) -> bool:
    return "/" in ref or "." in ref or ref.startswith("~")


def expand_mentions(
    prompt: str,
    root: Path,
    *,
    deny: Iterable[str] = (),
    extra_roots: Iterable[str] = (),
) -> Mentions:
    """`prompt` with each `@path` mention attached (see the module docstring). `deny` are `permissions.deny` rules
    (a `Read(...)` deny refuses its paths); `extra_roots` the additional directories a mention may name."""
    roots = WorkspaceRoots(root, extra_roots)
    rules = PermissionRules.parse(deny=tuple(deny), root=root)
    collected = _Collected()
    seen: set[str] = set()

    def replace(match: re.Match[str]) -> str:
        escaped, ref = match.group(1), match.group(2)
        if escaped:
            return "@" + ref
        rel = ref.rstrip(_TRAILING) or ref
        if rel in seen:
            return match.group(0)
        seen.add(rel)
        _attach(rel, roots, rules, collected)
        return match.group(0)

    text = MENTION.sub(replace, prompt)
    if not collected.blocks:
        return Mentions(text, notes=tuple(collected.notes))
    return Mentions(
        f"{text.rstrip()}\n\n" + "\n\n".join(collected.blocks),
        attached=tuple(collected.attached),
        notes=tuple(collected.notes),
    )


def _attach(ref: str, roots: WorkspaceRoots, rules: PermissionRules, into: _Collected) -> None:
    if len(ref) > MAX_MENTION_CHARS:
        raise _refused(ref, f"a path of {len(ref):,} characters (at most {MAX_MENTION_CHARS:,})", "shorten the path")
    path = ref[2:] if ref.startswith("./") and len(ref) > 2 else ref
    try:
        norm = roots.normalise(path)
    except PathRefused as exc:
        raise _refused(
            ref, exc.info.message, "mention a file inside the workspace (or an --add-dir directory)"
        ) from None
    match = rules.evaluate("Read", {"file_path": path}, roots.root)
    if match is not None and match.decision == "deny":
        raise _refused(
            ref,
            f"permissions.deny rule {match.rule.raw!r} denies reading it",
            "remove the rule from permissions.deny to attach this file",
        )
    if len(into.attached) >= MAX_MENTIONS:
        raise _refused(ref, f"more than {MAX_MENTIONS} mentions in one prompt", "mention fewer files")
    try:
        if path.endswith("/") or _is_dir(roots, norm):
            _attach_dir(ref, norm, roots, into)
        else:
            _attach_file(ref, roots, into)
    except PathRefused as exc:
        raise _refused(ref, exc.info.message, "mention a regular file inside the workspace") from None
    except BearAgentError as exc:
        if exc.info.code.endswith("not_found"):
            if _looks_like_path(ref):  # `@types/node`: a package name, or a typo the note lets the user see
                into.notes.append(
                    f"@{ref} names no file or directory in the workspace: sent as text (Tab completes @paths in "
                    "the session; write \\@ to send an @ without this note)"
                )
            return
        raise


def _is_dir(roots: WorkspaceRoots, norm: str) -> bool:
    if norm == "":
        return True
    try:
        fd, _rel = roots.open_dir(norm)
    except (BearAgentError, OSError):
        return False
    os.close(fd)
    return True


def _attach_file(ref: str, roots: WorkspaceRoots, into: _Collected) -> None:
    opened = roots.open_read(ref[2:] if ref.startswith("./") else ref)
    try:
        data = os.read(opened.fd, MAX_FILE_BYTES + 1)
    finally:
        os.close(opened.fd)
    if b"\x00" in data[:8192]:
        raise _refused(ref, "it is a binary file", "mention a text file")
    cut = len(data) > MAX_FILE_BYTES
    text = data[:MAX_FILE_BYTES].decode("utf-8", errors="replace")
    size = len(text.encode("utf-8"))
    if into.size + size > MAX_TOTAL_BYTES:
        raise _refused(
            ref,
            f"the attached files would exceed {MAX_TOTAL_BYTES // 1024} KiB",
            "mention fewer or smaller files, or ask the model to Read parts of them",
        )
    into.size += size
    if cut:
        into.notes.append(f"@{ref} is {opened.st.st_size:,} bytes: its first {MAX_FILE_BYTES // 1024} KiB are attached")
        text += f"\n[… cut: the file is {opened.st.st_size:,} bytes; Read it for the rest]"
    into.attached.append(opened.rel)
    into.blocks.append(f'<file path="{opened.rel}">\n{text.rstrip()}\n</file>')


def _attach_dir(ref: str, norm: str, roots: WorkspaceRoots, into: _Collected) -> None:
    fd, rel = roots.open_dir(norm) if norm else (os.open(roots.root, os.O_RDONLY | os.O_DIRECTORY), "")
    entries: list[str] = []
    more = 0
    try:
        with os.scandir(fd) as listing:
            for entry in sorted(listing, key=lambda e: e.name):
                if entry.name in _SKIP_NAMES:
                    continue
                if len(entries) >= MAX_LISTING_ENTRIES:
                    more += 1
                    continue
                try:
                    mode = entry.stat(follow_symlinks=False).st_mode
                except OSError:
                    continue
                entries.append(entry.name + ("/" if stat.S_ISDIR(mode) else "@" if stat.S_ISLNK(mode) else ""))
    finally:
        os.close(fd)
    body = "\n".join(entries) or "(empty)"
    if more:
        body += f"\n… and {more} more entries"
    shown = rel or "."
    into.size += len(body)
    into.attached.append(shown.rstrip("/") + "/")
    into.blocks.append(f'<directory path="{shown}">\n{body}\n</directory>')


def workspace_mentions(loaded: LoadedWorkspace, prompt: str, *, add_dirs: Iterable[str] = ()) -> Mentions:
    """`expand_mentions` with the workspace's `permissions.deny` rules and additional directories (config's and
    `add_dirs`, a run's `--add-dir`)."""
    permissions = loaded.config.permissions
    return expand_mentions(
        prompt,
        loaded.root,
        deny=permissions.deny,
        extra_roots=(*permissions.additional_directories, *add_dirs),
    )


def request_mentions(loaded: LoadedWorkspace, prompt: str) -> Mentions:
    """`workspace_mentions` for a prompt sent over HTTP (`POST /v1/sessions/{id}/runs`): the same rule, except in a
    workspace whose tools never run (`execution_policy: none`), where no file is read for the caller (the prompt
    is sent as typed, with a note when it has a mention), since its Read tool would not read one either."""
    if loaded.config.execution_policy == "none":
        if any(m.group(1) == "" for m in MENTION.finditer(prompt)):
            return Mentions(
                prompt,
                notes=("@mentions were sent as text: this workspace's tools never run (execution_policy: none)",),
            )
        return Mentions(prompt)
    return workspace_mentions(loaded, prompt)
