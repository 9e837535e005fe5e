"""Which handlers one hook event runs (docs/hooks.md): a group's `matcher` and `agent`, then each handler's `if`;
identical handlers of one event run once; a handler with `once: true` runs once per session (the first event that
selects it; the session is the one of the transcript the dispatcher writes, so every run and child run of a session
shares it). A matcher that does not compile is a problem the event reports, and its group does not run."""

from __future__ import annotations

import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from bearagent.domain._base import JsonValue
from bearagent.domain.specs import HookHandlerSpec, HookMatcherSpec
from bearagent.hooks.transcript import TranscriptWriter

_ONCE_DONE: weakref.WeakKeyDictionary[TranscriptWriter, set[str]] = weakref.WeakKeyDictionary()
"""The `once` handlers that already ran, per session (its transcript writer: one per session and runtime)."""


@dataclass(frozen=True, slots=True)
class SelectedHandler:
    group: HookMatcherSpec
    spec: HookHandlerSpec


def select_handlers(
    groups: Sequence[HookMatcherSpec],
    event: str,
    target: str | None,
    agent_name: str | None,
    fields: Mapping[str, JsonValue],
    *,
    workspace_root: Path,
    session: TranscriptWriter,
) -> tuple[list[SelectedHandler], list[str]]:
    """The handlers of `groups` that `event` (matched on `target`) runs, in config order, and the problems met."""
    from bearagent.hooks.matching import condition_selects, matcher_matches

    selected: list[SelectedHandler] = []
    problems: list[str] = []
    seen: set[str] = set()
    once_done = _ONCE_DONE.setdefault(session, set())
    for group in groups:
        if group.event != event or (group.agent is not None and group.agent != agent_name):
            continue
        try:
            if not matcher_matches(group.matcher, target):
                continue
        except ValueError as exc:
            problems.append(f"{group.source or 'hooks'}: {exc}; fix the matcher (this group did not run)")
            continue
        for spec in group.hooks:
            key = spec.model_dump_json()
            if key in seen:
                continue
            seen.add(key)
            if not condition_selects(spec.condition, event, fields, workspace_root):
                continue
            if spec.once:
                once_key = f"{event}\0{group.matcher}\0{key}"
                if once_key in once_done:
                    continue
                once_done.add(once_key)
            selected.append(SelectedHandler(group, spec))
    return selected, problems


__all__ = ["SelectedHandler", "select_handlers"]
