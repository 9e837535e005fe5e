"""The default limits of the rewind blob store, read by the store itself (`rewind/tree.py`) and by the user config's
`rewind:` section (`config/rewind_settings.py`), which loading any workspace imports: a leaf, so reading the config
does not import the tree scanner and the run events it records."""

from __future__ import annotations

DEFAULT_MAX_FILE_BYTES = 16 * 1024 * 1024
"""A file larger than this is recorded by hash only (`rewind.max_file_bytes` in the user config)."""
DEFAULT_MAX_STORE_BYTES = 1024 * 1024 * 1024
"""The blob store's size limit (`rewind.max_store_bytes`); a content that would exceed it is recorded by hash only."""
