"""The workspace tree as facts: a content-addressed blob store beside the log and a metadata scan of the tree.

The blob store (`.bearagent/blobs/ab/<sha256>`) keeps file contents zlib-compressed, once per content. A file over the
store's limit is recorded by its hash only ("not restorable"), never silently dropped. The scan reads metadata only
(`lstat`: kind, mode, size, mtime, inode); content is hashed only for the paths whose metadata changed.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import stat
import time
import zlib
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Literal

from bearagent.domain.run_events import FileState
from bearagent.rewind.limits import DEFAULT_MAX_FILE_BYTES, DEFAULT_MAX_STORE_BYTES
from bearagent.rewind.watch import Watcher

SKIPPED_DIRS = frozenset({".git", ".bearagent"})
"""Top-level directories never captured nor restored: the repository's own history and BearAgent's state."""
MAX_SCAN_ENTRIES = 200_000
"""A tree with more entries than this is not scanned (capture is reported as partial, never silent)."""

Kind = Literal["file", "symlink", "dir"]


@dataclasses.dataclass(frozen=True, slots=True)
class Meta:
    """What `lstat` says about one path: enough to tell, without reading it, whether it may have changed."""

    kind: Kind
    mode: int
    size: int
    mtime_ns: int
    ino: int
    target: str | None = None


class TreeTooLarge(Exception):
    """The tree has more than `MAX_SCAN_ENTRIES` entries."""


def scan(
    root: Path, limit: int = MAX_SCAN_ENTRIES, watcher: Watcher | None = None, linked: set[str] | None = None
) -> dict[str, Meta]:
    """Every path under `root` (relative, `/`-separated) but `SKIPPED_DIRS` at the top: files, symlinks (not followed)
    and directories. Other kinds (sockets, fifos, devices) are left out. With a `watcher`, each directory is watched
    before it is listed (so that a change made after its listing is in the watcher's next drain). `linked` receives
    the files that have more than one hard link."""
    out: dict[str, Meta] = {}
    stack: list[tuple[str, str]] = [(str(root), "")]
    while stack:
        path, prefix = stack.pop()
        if watcher is not None:
            watcher.watch(path, prefix[:-1])
        try:
            entries = os.scandir(path)
        except OSError:
            continue
        with entries:
            for entry in entries:
                name = entry.name
                if not prefix and name in SKIPPED_DIRS:
                    continue
                rel = prefix + name
                try:
                    st = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                mode = st.st_mode
                if stat.S_ISREG(mode):
                    kind: Kind = "file"
                    target = None
                    if linked is not None and st.st_nlink > 1:
                        linked.add(rel)
                elif stat.S_ISLNK(mode):
                    kind = "symlink"
                    try:
                        target = os.readlink(entry.path)
                    except OSError:
                        continue
                elif stat.S_ISDIR(mode):
                    kind = "dir"
                    target = None
                    stack.append((entry.path, rel + "/"))
                else:
                    continue
                out[rel] = Meta(kind, stat.S_IMODE(mode), st.st_size, st.st_mtime_ns, st.st_ino, target)
                if len(out) > limit:
                    raise TreeTooLarge(f"more than {limit} entries under {root}")
    return out


def same(a: Meta, b: Meta) -> bool:
    """Whether two scans of a path may be taken as the same content (a directory's mtime is ignored: its entries are
    scanned themselves)."""
    if a.kind != b.kind or a.mode != b.mode:
        return False
    if a.kind == "dir":
        return True
    return a.size == b.size and a.mtime_ns == b.mtime_ns and a.ino == b.ino and a.target == b.target


class BlobStore:
    """Contents by sha256, zlib-compressed, written once (atomically) under `root`."""

    def __init__(
        self,
        root: Path,
        *,
        max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
        max_store_bytes: int = DEFAULT_MAX_STORE_BYTES,
    ) -> None:
        self.root = root
        self.max_file_bytes = max_file_bytes
        self.max_store_bytes = max_store_bytes
        self._used: int | None = None

    def _path(self, sha: str) -> Path:
        return self.root / sha[:2] / sha

    def has(self, sha: str) -> bool:
        return self._path(sha).is_file()

    def used(self) -> int:
        if self._used is None:
            total = 0
            if self.root.is_dir():
                for sub in self.root.iterdir():
                    if sub.is_dir():
                        total += sum(f.stat().st_size for f in sub.iterdir() if f.is_file())
            self._used = total
        return self._used

    def put(self, data: bytes, sha: str | None = None) -> tuple[str, bool]:
        """Store `data`; return its sha256 and whether it is kept (False: over a limit, hash only)."""
        sha = sha or hashlib.sha256(data).hexdigest()
        if self.has(sha):
            return sha, True
        if len(data) > self.max_file_bytes:
            return sha, False
        packed = zlib.compress(data, 1)
        if self.used() + len(packed) > self.max_store_bytes:
            return sha, False
        target = self._path(sha)
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".{sha}.{os.getpid()}.tmp")
        tmp.write_bytes(packed)
        tmp.replace(target)
        self._used = self.used() + len(packed)
        return sha, True

    def sweep(self, keep: Collection[str], *, grace_seconds: float, remove: bool) -> tuple[int, int]:
        """Remove the blobs not in `keep` and older than `grace_seconds` (one just written may belong to a call whose
        facts are not recorded yet); return how many there were and their size. Nothing is followed through a
        link."""
        if not self.root.is_dir() or self.root.is_symlink():
            return 0, 0
        cutoff = time.time() - grace_seconds
        count = size = 0
        for sub in self.root.iterdir():
            if sub.is_symlink() or not sub.is_dir():
                continue
            for blob in sub.iterdir():
                name = blob.name
                try:
                    st = blob.lstat()
                except FileNotFoundError:
                    continue
                if name in keep or not stat.S_ISREG(st.st_mode) or st.st_mtime > cutoff:
                    continue
                count += 1
                size += st.st_size
                if remove:
                    blob.unlink(missing_ok=True)
        if remove:
            self._used = None
        return count, size

    def get(self, sha: str) -> bytes:
        """The content of `sha`, checked against its hash (a damaged blob raises ValueError, never restores)."""
        data = zlib.decompress(self._path(sha).read_bytes())
        if hashlib.sha256(data).hexdigest() != sha:
            raise ValueError(f"blob {sha} in {self.root} is damaged (its content no longer matches its hash)")
        return data


def file_sha(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def capture_state(root: Path, rel: str, meta: Meta, blobs: BlobStore) -> FileState | None:
    """The `FileState` of one scanned path, its content put in the blob store (None: it vanished meanwhile)."""
    if meta.kind == "dir":
        return FileState(kind="dir", mode=meta.mode)
    if meta.kind == "symlink":
        return FileState(kind="symlink", mode=meta.mode, target=meta.target)
    path = root / rel
    try:
        if meta.size > blobs.max_file_bytes:
            return FileState(kind="file", mode=meta.mode, size=meta.size, sha256=file_sha(path), restorable=False)
        data = path.read_bytes()
    except OSError:
        return None
    sha, kept = blobs.put(data)
    return FileState(kind="file", mode=meta.mode, size=len(data), sha256=sha, restorable=kept)


def current_state(root: Path, rel: str) -> FileState | None:
    """What `rel` is now (None: absent), hashed but not stored: to compare with a recorded state."""
    path = root / rel
    try:
        st = path.lstat()
    except FileNotFoundError:
        return None
    mode = stat.S_IMODE(st.st_mode)
    if stat.S_ISLNK(st.st_mode):
        return FileState(kind="symlink", mode=mode, target=os.readlink(path))
    if stat.S_ISDIR(st.st_mode):
        return FileState(kind="dir", mode=mode)
    if stat.S_ISREG(st.st_mode):
        return FileState(kind="file", mode=mode, size=st.st_size, sha256=file_sha(path))
    return FileState(kind="file", mode=mode, size=st.st_size)


def equal_states(a: FileState | None, b: FileState | None) -> bool:
    """Whether two states are the same content: kind, mode, hash / target (size and restorability aside). A
    symlink's mode is not compared (Linux does not let it be set)."""
    if a is None or b is None:
        return a is b
    if a.kind != b.kind:
        return False
    if a.kind == "symlink":
        return a.target == b.target
    if a.kind == "dir":
        return a.mode == b.mode
    return a.mode == b.mode and a.sha256 == b.sha256


def meta_map(scanned: Mapping[str, Meta]) -> dict[str, list[object]]:
    """A scan as JSON (the index of `capture.py`)."""
    return {k: [m.kind, m.mode, m.size, m.mtime_ns, m.ino, m.target] for k, m in scanned.items()}
